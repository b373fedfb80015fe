// `rocecap fleet manifest`: every host's manifest summary (published by its agent when its
// rocecapd ended) merged into one fleet manifest with totals; hosts without one are listed.
#include "fleet/coordinator/coordinator.hpp"
#include "fleet/coordinator/run_view.hpp"
#include "rundir/atomic_write.hpp"

namespace rocecap::fleet {
namespace {

using nlohmann::json;

void add_totals(json& into, const json& t) {
  for (const auto& [k, v] : t.items())
    if (v.is_number_unsigned() || v.is_number_integer())
      into[k] = into.value(k, uint64_t{0}) + v.get<uint64_t>();
}

}  // namespace

int fleet_manifest(EtcdClient& etcd, const std::string& fleet, const std::string& run,
                   const std::string& output, std::ostream& out, std::ostream& err) {
  const Keys keys(fleet);
  const RunView v = read_run(etcd, keys, run);
  if (!v.exists()) {
    err << "fleet " << fleet << ": no run " << run << '\n';
    return 1;
  }
  json hosts = json::object(), totals = json::object(), missing = json::array();
  for (const HostView& h : v.hosts) {
    if (h.state == "excluded" || h.state == "refused") continue;
    if (h.manifest.is_null()) {
      missing.push_back({{"host", h.name}, {"state", h.state}});
      continue;
    }
    hosts[h.name] = h.manifest;
    add_totals(totals, h.manifest.value("totals", json::object()));
  }
  const json m = {{"fleet", fleet},         {"run", run},
                  {"state", v.run_state()}, {"start", v.state.value("start", "")},
                  {"hosts", hosts},         {"totals", totals},
                  {"missing", missing}};
  if (output.empty()) {
    out << m.dump(2) << '\n';
  } else if (std::string e = rundir::write_file_atomically(output, m.dump(2) + "\n"); !e.empty()) {
    err << e << '\n';
    return 1;
  } else {
    out << output << ": " << hosts.size() << " hosts, " << totals.value("packets", uint64_t{0})
        << " packets, " << totals.value("lost", uint64_t{0}) << " lost frames\n";
  }
  for (const json& x : missing)
    err << "run " << run << ": no manifest from " << x["host"].get<std::string>() << " ("
        << x["state"].get<std::string>() << ")\n";
  return missing.empty() ? 0 : 1;
}

}  // namespace rocecap::fleet
