#include "fleet/agent/local_run.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "config/loader.hpp"
#include "config/units.hpp"
#include "rundir/atomic_write.hpp"

namespace rocecap::fleet {
namespace {

using nlohmann::json;

constexpr const char* kPhaseNames[] = {"checking", "refused", "accepted", "capturing",
                                       "stopping", "stopped", "failed",   "cancelled"};

Phase phase_from(const std::string& s) {
  for (std::size_t i = 0; i < std::size(kPhaseNames); ++i)
    if (s == kPhaseNames[i]) return static_cast<Phase>(i);
  return Phase::failed;
}

}  // namespace

const char* to_string(Phase p) {
  return kPhaseNames[static_cast<int>(p)];
}

std::vector<std::string> read_run_facts(LocalRun& run, bool check_host) {
  const config::LoadResult r = config::load_file(run.run_file, config::snapshot_host());
  std::vector<std::string> problems;
  for (const config::Problem& p : r.problems)
    problems.push_back(config::format_problem(p));
  if (!r.ok()) return problems;
  const config::RunConfig& c = *r.config;
  run.metrics_listen = c.metrics.enabled ? config::format_ipv4(c.metrics.address) + ":" +
                                               std::to_string(c.metrics.port)
                                         : "";
  run.output_dir = c.output.directory;
  run.run_dir = c.output.directory + "/" + c.run.name;
  if (!check_host) return problems;
  // rocecapd --check-config does not look for the live interfaces (a run file may be checked
  // on another machine); the agent runs on the capture host itself, so a plan naming an
  // interface this host lacks is refused here, before the start, not failed at it.
  const char* sysfs = std::getenv("ROCECAP_SYSFS_ROOT");
  const std::string root = sysfs && *sysfs ? sysfs : "/sys";
  if (c.capture.backend == config::Backend::pcap_file) return problems;
  for (std::size_t i = 0; i < c.capture.interfaces.size(); ++i) {
    const std::string& name = c.capture.interfaces[i].name;
    if (!std::filesystem::exists(root + "/class/net/" + name))
      problems.push_back(run.run_file + ": capture.interfaces[" + std::to_string(i) +
                         "].name: no network interface '" + name + "' on this host");
  }
  return problems;
}

std::string save_current(const std::string& state_dir, const LocalRun& run) {
  const json j = {{"run", run.name},
                  {"run_file", run.run_file},
                  {"phase", to_string(run.phase)},
                  {"start_ns", run.start_ns},
                  {"pid", run.daemon ? run.daemon->pid() : 0},
                  {"answer_published", run.answer_published},
                  {"manifest_published", run.manifest_published},
                  {"triggers_done", run.triggers_done}};
  return rundir::write_file_atomically(state_dir + "/current.json", j.dump(2) + "\n");
}

std::optional<LocalRun> load_current(const std::string& state_dir) {
  std::ifstream in(state_dir + "/current.json");
  if (!in) return std::nullopt;
  const json j = json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  LocalRun run;
  run.name = j.value("run", "");
  run.run_file = j.value("run_file", "");
  run.phase = phase_from(j.value("phase", ""));
  run.start_ns = j.value("start_ns", int64_t{0});
  run.answer_published = j.value("answer_published", false);
  run.manifest_published = j.value("manifest_published", false);
  run.triggers_done = j.value("triggers_done", std::set<std::string>{});
  if (run.name.empty() || run.run_file.empty()) return std::nullopt;
  read_run_facts(run, false);
  if (run.phase == Phase::capturing || run.phase == Phase::stopping) {
    run.daemon = DaemonProcess::adopt(j.value("pid", 0), run.run_file);
    // Gone while no agent watched: ended; the manifest tells how.
    if (!run.daemon) run.phase = Phase::stopped;
  }
  return run;
}

}  // namespace rocecap::fleet
