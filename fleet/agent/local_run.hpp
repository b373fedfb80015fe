// The agent's view of the one run this host takes part in, and its record on disk
// (<state_dir>/current.json) that lets a restarted agent adopt a running rocecapd.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fleet/agent/daemon_process.hpp"
#include "fleet/agent/host_report.hpp"

namespace rocecap::fleet {

enum class Phase { checking, refused, accepted, capturing, stopping, stopped, failed, cancelled };
const char* to_string(Phase p);
inline bool ended(Phase p) {
  return p == Phase::refused || p == Phase::stopped || p == Phase::failed || p == Phase::cancelled;
}

struct LocalRun {
  std::string name;
  std::string run_file;  // path of the host's run file as written by the agent
  std::string metrics_listen, output_dir, run_dir;
  Phase phase = Phase::checking;
  int64_t start_ns = 0;  // 0 until the run's state says go
  std::vector<std::string> problems;
  std::optional<DaemonProcess> daemon;
  std::optional<int> exit_code;
  LiveCounters counters;
  nlohmann::json manifest;  // the summary, once ended and read
  std::set<std::string> triggers_done;
  // What etcd has not been told yet.
  bool answer_published = false, manifest_published = false;
};

// Fills metrics_listen / output_dir / run_dir from the run file; problems when it does not load
// or (check_host) names a capture interface this host does not have.
std::vector<std::string> read_run_facts(LocalRun& run, bool check_host);

// Empty, or why it could not be written.
std::string save_current(const std::string& state_dir, const LocalRun& run);
// The run recorded by an earlier agent: still capturing (its rocecapd adopted), or ended.
std::optional<LocalRun> load_current(const std::string& state_dir);

}  // namespace rocecap::fleet
