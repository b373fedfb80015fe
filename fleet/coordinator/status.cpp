// `rocecap fleet status`: the run's state and each host's, from the keys the agents keep fresh.
#include <fmt/core.h>

#include "fleet/coordinator/coordinator.hpp"
#include "fleet/coordinator/run_view.hpp"

namespace rocecap::fleet {
namespace {

using nlohmann::json;

uint64_t counter(const HostView& h, const char* key) {
  if (!h.status.is_null()) return h.status.value(key, uint64_t{0});
  return 0;
}

json host_json(const HostView& h) {
  json j = {{"host", h.name}, {"state", h.state}};
  if (!h.status.is_null()) j["status"] = h.status;
  if (!h.answer.is_null() && h.answer.contains("problems")) j["problems"] = h.answer["problems"];
  if (!h.manifest.is_null()) j["totals"] = h.manifest.value("totals", json::object());
  return j;
}

}  // namespace

int fleet_status(EtcdClient& etcd, const std::string& fleet, const std::string& run, bool as_json,
                 std::ostream& out, std::ostream& err) {
  const Keys keys(fleet);
  const RunView v = read_run(etcd, keys, run);
  if (!v.exists()) {
    err << "fleet " << fleet << ": no run " << run << '\n';
    return 1;
  }
  if (as_json) {
    json hosts = json::array();
    for (const HostView& h : v.hosts)
      hosts.push_back(host_json(h));
    out << json{{"fleet", fleet}, {"run", run}, {"state", v.state}, {"hosts", hosts}}.dump(2)
        << '\n';
    return 0;
  }
  out << fmt::format("run {} ({}), start {}\n", run, v.run_state(), v.state.value("start", "?"));
  out << fmt::format("{:<16} {:<10} {:>14} {:>12} {:>16}  {}\n", "host", "state", "packets",
                     "lost frames", "disk bytes", "updated");
  for (const HostView& h : v.hosts) {
    uint64_t packets = counter(h, "packets"), lost = counter(h, "lost_frames"),
             disk = counter(h, "disk_bytes");
    if (!h.manifest.is_null()) {  // final: the manifest's totals, not the last live scrape
      const json t = h.manifest.value("totals", json::object());
      packets = t.value("packets", uint64_t{0});
      lost = t.value("lost", uint64_t{0});
      disk = t.value("bytes", uint64_t{0});
    }
    out << fmt::format("{:<16} {:<10} {:>14} {:>12} {:>16}  {}\n", h.name, h.state, packets, lost,
                       disk, h.status.is_null() ? "-" : h.status.value("updated", "-"));
    if (!h.answer.is_null())
      for (const json& p : h.answer.value("problems", json::array()))
        out << "    " << p.get<std::string>() << '\n';
  }
  return 0;
}

}  // namespace rocecap::fleet
