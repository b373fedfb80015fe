#include "fleet/coordinator/run_view.hpp"

#include <chrono>

#include "rundir/utc_time.hpp"

namespace rocecap::fleet {
namespace {

using nlohmann::json;

json parse_or_null(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  return j.is_discarded() ? json() : j;
}

std::map<std::string, json> by_host(EtcdClient& etcd, const std::string& dir) {
  std::map<std::string, json> out;
  for (const KeyValue& kv : etcd.get_prefix(dir)) {
    const std::string h = Keys::leaf(kv.key, dir);
    if (!h.empty()) out[h] = parse_or_null(kv.value);
  }
  return out;
}

bool going(const std::string& s) {
  return s == "go" || s == "stopping";
}

}  // namespace

RunView read_run(EtcdClient& etcd, const Keys& keys, const std::string& run) {
  RunView v;
  v.run = run;
  const auto state = etcd.get(keys.state(run));
  if (!state) return v;
  v.state = parse_or_null(state->value);
  auto answers = by_host(etcd, keys.answers(run));
  auto statuses = by_host(etcd, keys.statuses(run));
  auto manifests = by_host(etcd, keys.manifests(run));
  for (const json& h : v.state.value("hosts", json::array())) {
    HostView hv;
    hv.name = h.get<std::string>();
    hv.answer = answers[hv.name];
    hv.status = statuses[hv.name];
    hv.manifest = manifests[hv.name];
    hv.state = derive_state(v.run_state(), hv);
    v.hosts.push_back(std::move(hv));
  }
  return v;
}

std::string derive_state(const std::string& run_state, const HostView& h) {
  if (h.answer.is_null()) {
    if (run_state == "pending") return "checking";
    return run_state == "cancelled" ? "cancelled" : "no-answer";
  }
  if (!h.answer.value("accepted", false)) return going(run_state) ? "excluded" : "refused";
  if (!h.manifest.is_null()) return h.manifest.value("result", "failed");
  if (!h.status.is_null()) return h.status.value("state", "?");
  if (run_state == "cancelled") return "cancelled";
  if (run_state == "pending") return "accepted";
  return "lost";
}

std::string utc_text(int64_t ns) {
  return rundir::iso8601_utc(ns);
}

int64_t now_unix_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace rocecap::fleet
