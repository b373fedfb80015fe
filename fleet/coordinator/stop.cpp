// `rocecap fleet stop`: the run's state becomes stopping (every agent sends SIGTERM to its
// rocecapd); then it waits for each started host's manifest summary and marks the run stopped.
// A pending run (hosts still checking) is cancelled instead.
#include <thread>

#include "fleet/coordinator/coordinator.hpp"
#include "fleet/coordinator/run_view.hpp"

namespace rocecap::fleet {
namespace {

using nlohmann::json;

bool set_state(EtcdClient& etcd, const Keys& keys, const std::string& run, const std::string& to) {
  const auto kv = etcd.get(keys.state(run));
  if (!kv) return false;
  json s = json::parse(kv->value, nullptr, false);
  s["state"] = to;
  s[to] = utc_text(now_unix_ns());
  return etcd.put_if_unchanged(keys.state(run), s.dump(), kv->mod_revision);
}

bool settled(const HostView& h) {
  return h.state != "capturing" && h.state != "stopping" && h.state != "accepted";
}

}  // namespace

int fleet_stop(EtcdClient& etcd, const std::string& fleet, const std::string& run,
               std::chrono::seconds wait, std::ostream& out, std::ostream& err) {
  const Keys keys(fleet);
  RunView v = read_run(etcd, keys, run);
  if (!v.exists()) {
    err << "fleet " << fleet << ": no run " << run << '\n';
    return 1;
  }
  const std::string was = v.run_state();
  if (was != "pending" && was != "go" && was != "stopping") {
    err << "run " << run << ": already " << was << '\n';
    return 1;
  }
  const std::string to = was == "pending" ? "cancelled" : "stopping";
  if (was != to && !set_state(etcd, keys, run, to)) {
    err << "run " << run << ": its state changed meanwhile; try again\n";
    return 1;
  }
  out << "run " << run << ": " << to << '\n';
  if (to == "cancelled") return 0;
  const auto until = std::chrono::steady_clock::now() + wait;
  for (;;) {
    v = read_run(etcd, keys, run);
    bool all = true;
    for (const HostView& h : v.hosts)
      all = all && settled(h);
    if (all || std::chrono::steady_clock::now() >= until) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  int rc = 0;
  for (const HostView& h : v.hosts) {
    out << "  " << h.name << ": " << h.state << '\n';
    if (!settled(h) || h.state == "lost" || h.state == "failed") rc = 1;
  }
  if (!set_state(etcd, keys, run, "stopped")) return 1;
  out << "run " << run << ": stopped" << (rc ? " (not every host stopped cleanly)" : "") << '\n';
  return rc;
}

}  // namespace rocecap::fleet
