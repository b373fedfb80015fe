// Everything etcd holds about one fleet run, read in one go, with each host's state derived the
// way `fleet status` shows it.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "fleet/etcd/etcd_client.hpp"
#include "fleet/keys.hpp"

namespace rocecap::fleet {

struct HostView {
  std::string name;
  nlohmann::json answer;    // null: no answer yet
  nlohmann::json status;    // null: no live status (agent gone or not yet reporting)
  nlohmann::json manifest;  // null: no summary yet
  std::string state;        // see derive_state
};

struct RunView {
  std::string fleet, run;
  nlohmann::json state;         // the run's state value; null when the run does not exist
  std::vector<HostView> hosts;  // in the plan's order (the state's "hosts")
  bool exists() const { return !state.is_null(); }
  std::string run_state() const { return exists() ? state.value("state", "") : ""; }
};

RunView read_run(EtcdClient& etcd, const Keys& keys, const std::string& run);

// checking (no answer while pending), refused, excluded (refused, started without it),
// no-answer, accepted, capturing, stopping, stopped, failed, lost (no live status although the
// run is going and no final summary), cancelled.
std::string derive_state(const std::string& run_state, const HostView& host);

// "2026-11-28T02:00:05Z" etc. for a Unix time in ns.
std::string utc_text(int64_t ns);
int64_t now_unix_ns();

}  // namespace rocecap::fleet
