// `rocecap fleet prometheus-sd`: Prometheus file_sd targets from the agents alive in etcd
// (their keys live under their leases): one target per agent with its rocecapd metrics
// endpoint, labelled fleet, host and run. Prometheus re-reads the file when it changes.
#include "fleet/coordinator/coordinator.hpp"
#include "fleet/coordinator/run_view.hpp"
#include "rundir/atomic_write.hpp"

namespace rocecap::fleet {

int fleet_prometheus_sd(EtcdClient& etcd, const std::string& fleet, const std::string& output,
                        std::ostream& out, std::ostream& err) {
  using nlohmann::json;
  const Keys keys(fleet);
  json groups = json::array();
  for (const KeyValue& kv : etcd.get_prefix(keys.agents())) {
    const json a = json::parse(kv.value, nullptr, false);
    if (a.is_discarded() || a.value("metrics", "").empty()) continue;
    groups.push_back(
        {{"targets", json::array({a["metrics"]})},
         {"labels",
          {{"fleet", fleet}, {"host", a.value("host", "")}, {"run", a.value("run", "")}}}});
  }
  if (output.empty()) {
    out << groups.dump(2) << '\n';
    return 0;
  }
  if (std::string e = rundir::write_file_atomically(output, groups.dump(2) + "\n"); !e.empty()) {
    err << e << '\n';
    return 1;
  }
  out << output << ": " << groups.size() << " targets\n";
  return 0;
}

}  // namespace rocecap::fleet
