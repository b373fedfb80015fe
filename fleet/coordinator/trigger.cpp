// `rocecap fleet trigger`: one trigger key under the run; every capturing host's agent hands it
// to its rocecapd (the same request as `rocecap trigger`) and writes the answer beside it. The
// command prints the union: per host rocecapd's answer (streams, windows, files), and which
// hosts did not answer in time.
#include <fmt/core.h>
#include <unistd.h>

#include <thread>

#include "fleet/coordinator/coordinator.hpp"
#include "fleet/coordinator/run_view.hpp"

namespace rocecap::fleet {
namespace {

using nlohmann::json;

// A time as `rocecap trigger` takes it: Unix ns when all digits, else UTC text.
json time_value(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("0123456789") == std::string::npos)
    return json(std::stoll(s));
  return json(s);
}

}  // namespace

int fleet_trigger(EtcdClient& etcd, const std::string& fleet, const std::string& run,
                  const TriggerWindow& w, std::chrono::seconds wait, std::ostream& out,
                  std::ostream& err) {
  const Keys keys(fleet);
  const RunView v = read_run(etcd, keys, run);
  if (v.run_state() != "go") {
    err << "run " << run << ": " << (v.exists() ? "is " + v.run_state() : "does not exist")
        << ", not capturing: no trigger\n";
    return 1;
  }
  std::vector<std::string> expected;
  for (const HostView& h : v.hosts)
    if (h.state == "capturing") expected.push_back(h.name);
  // Sortable and unique without coordination: time, then this process.
  const std::string id = fmt::format("{}-{}", now_unix_ns(), ::getpid());
  json t = {{"start", time_value(w.start)},
            {"end", time_value(w.end)},
            {"created", utc_text(now_unix_ns())}};
  if (!w.label.empty()) t["label"] = w.label;
  etcd.put(keys.trigger(run, id), t.dump());
  json answers = json::object();
  const auto until = std::chrono::steady_clock::now() + wait;
  for (;;) {
    for (const KeyValue& kv : etcd.get_prefix(keys.trigger_answers(run, id)))
      answers[Keys::leaf(kv.key, keys.trigger_answers(run, id))] =
          json::parse(kv.value, nullptr, false);
    bool all = true;
    for (const std::string& h : expected)
      all = all && answers.contains(h);
    if (all || std::chrono::steady_clock::now() >= until) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  json missing = json::array();
  int rc = 0;
  for (const std::string& h : expected)
    if (!answers.contains(h)) missing.push_back(h);
  for (const auto& [h, a] : answers.items())
    if (a.value("exit", -1) != 0) rc = 1;
  // Exit 3 is kept for etcd itself: a host that did not answer is an incomplete trigger.
  if (!missing.empty()) rc = 1;
  for (const json& h : missing)
    err << "run " << run << ": no answer from " << h.get<std::string>() << " within "
        << wait.count() << " s (its agent polls etcd; is it alive?)\n";
  out << json{{"trigger", id},
              {"run", run},
              {"window", t},
              {"hosts", answers},
              {"missing", missing}}
             .dump(2)
      << '\n';
  if (expected.empty()) err << "run " << run << ": no host is capturing\n";
  return expected.empty() ? 1 : rc;
}

}  // namespace rocecap::fleet
