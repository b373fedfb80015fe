// `rocecap fleet start`: one transaction writes the run's state (pending, with the start time),
// the plan, every host's run file and every host's assignment, only if the run does not exist
// yet. The agents check their run files and answer; when all accepted (or, with --partial, the
// ones that did), the state becomes go and every agent starts rocecapd at the start time.
#include <thread>

#include "config/loader.hpp"
#include "fleet/coordinator/coordinator.hpp"
#include "fleet/coordinator/run_view.hpp"
#include "fleet/keys.hpp"

namespace rocecap::fleet {
namespace {

using nlohmann::json;
constexpr int64_t kSecond = 1000000000;

// The next whole second at least `lead` from now: every host's first frame is then the first
// of a second (CODIF frames are aligned to their period's seconds).
int64_t start_time(std::chrono::seconds lead) {
  const int64_t t = now_unix_ns() + lead.count() * kSecond;
  return (t + kSecond - 1) / kSecond * kSecond;
}

// Hosts still in a run that has not ended: they cannot take another. `seen` gets every
// assignment key's revision as read, so the start's transaction fails if another start
// assigned one of these hosts in between.
std::vector<std::string> busy_hosts(EtcdClient& etcd, const Keys& keys, const Plan& plan,
                                    std::vector<EtcdClient::Unchanged>& seen) {
  std::vector<std::string> busy;
  for (const HostPlan& h : plan.hosts) {
    const std::string key = keys.prefix() + "/assigned/" + h.name;
    const auto a = etcd.get(key);
    seen.push_back({key, a ? a->mod_revision : 0});
    if (!a) continue;
    const std::string other = json::parse(a->value, nullptr, false).value("run", "");
    if (other.empty() || other == plan.run) continue;
    const RunView v = read_run(etcd, keys, other);
    const std::string s = v.run_state();
    if (s == "pending" || s == "go" || s == "stopping")
      busy.push_back(h.name + " (in run " + other + ", " + s + ")");
  }
  return busy;
}

json state_value(const Plan& plan, const std::string& state, int64_t start_ns,
                 const StartOptions& o) {
  json hosts = json::array();
  for (const HostPlan& h : plan.hosts)
    hosts.push_back(h.name);
  return {{"state", state},
          {"start_ns", start_ns},
          {"start", utc_text(start_ns)},
          {"hosts", hosts},
          {"partial", o.partial},
          {"created", utc_text(now_unix_ns())},
          {"by", std::string(getenv("USER") ? getenv("USER") : "")}};
}

// The state changes from pending only if nobody else changed it meanwhile (a `fleet stop` of
// the pending run cancels it: that must not be overwritten with go).
bool settle(EtcdClient& etcd, const Keys& keys, const std::string& run, const json& state,
            std::ostream& err) {
  const auto now = etcd.get(keys.state(run));
  const bool pending =
      now && json::parse(now->value, nullptr, false).value("state", "") == "pending";
  if (pending && etcd.put_if_unchanged(keys.state(run), state.dump(), now->mod_revision))
    return true;
  err << "run " << run << ": its state changed while the hosts checked (a fleet stop?): left as "
      << (now ? json::parse(now->value, nullptr, false).value("state", "?") : "gone") << '\n';
  return false;
}

// Waits for every host's answer; returns the view once all answered or the time is up.
RunView wait_for_answers(EtcdClient& etcd, const Keys& keys, const Plan& plan,
                         std::chrono::seconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    RunView v = read_run(etcd, keys, plan.run);
    bool all = true;
    for (const HostView& h : v.hosts)
      all = all && !h.answer.is_null();
    if (all || std::chrono::steady_clock::now() >= until) return v;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

void print_refusal(const HostView& h, std::ostream& err) {
  if (h.answer.is_null()) {
    err << "  " << h.name << ": no answer (is rocecap-agent running there, for this fleet?)\n";
    return;
  }
  err << "  " << h.name << ": refused its run file:\n";
  for (const json& p : h.answer.value("problems", json::array()))
    err << "    " << p.get<std::string>() << '\n';
}

}  // namespace

int fleet_start(EtcdClient& etcd, const Plan& plan, const StartOptions& o, std::ostream& out,
                std::ostream& err) {
  const Keys keys(plan.fleet);
  // The start time is the fleet's to choose (it becomes every host's run.start): a plan with
  // its own would be silently overridden.
  if (!plan.hosts.empty()) {
    const config::LoadResult r = config::load_snapshot(plan.hosts.front().run_file, "plan");
    if (r.ok() && r.config->run.start) {
      err << "fleet " << plan.fleet << ": run " << plan.run
          << ": the plan sets run.start; fleet start chooses the start time (--lead): leave "
             "run.start out of the plan\n";
      return 2;
    }
  }
  std::vector<EtcdClient::Unchanged> assignments;
  if (auto busy = busy_hosts(etcd, keys, plan, assignments); !busy.empty()) {
    err << "fleet " << plan.fleet << ": run " << plan.run << " not started: hosts still busy:\n";
    for (const std::string& b : busy)
      err << "  " << b << '\n';
    return 1;
  }
  int64_t start_ns = start_time(o.lead);
  std::vector<EtcdPut> puts = {
      {keys.state(plan.run), state_value(plan, "pending", start_ns, o).dump()},
      {keys.plan(plan.run), plan.text}};
  for (const HostPlan& h : plan.hosts) {
    puts.push_back({keys.host(plan.run, h.name), h.run_file});
    puts.push_back({keys.prefix() + "/assigned/" + h.name, json{{"run", plan.run}}.dump()});
  }
  if (!etcd.create(keys.state(plan.run), puts, assignments)) {
    const RunView v = read_run(etcd, keys, plan.run);
    if (!v.exists()) {
      err << "fleet " << plan.fleet << ": run " << plan.run
          << " not started: another start assigned one of its hosts meanwhile; try again\n";
      return 1;
    }
    err << "fleet " << plan.fleet << ": run " << plan.run << " exists already (state "
        << v.run_state() << ", created " << v.state.value("created", "?")
        << "): not started again; choose another run.name\n";
    return 1;
  }
  out << "run " << plan.run << ": written for " << plan.hosts.size()
      << " hosts; waiting for their checks\n";
  const RunView v = wait_for_answers(etcd, keys, plan, o.answer_timeout);
  std::vector<const HostView*> refused;
  std::size_t accepted = 0;
  for (const HostView& h : v.hosts) {
    if (!h.answer.is_null() && h.answer.value("accepted", false))
      ++accepted;
    else
      refused.push_back(&h);
  }
  if (!refused.empty()) {
    err << "run " << plan.run << ": " << refused.size() << " of " << v.hosts.size()
        << " hosts refused or did not answer:\n";
    for (const HostView* h : refused)
      print_refusal(*h, err);
  }
  json state = state_value(plan, "go", 0, o);
  if (!refused.empty() && (!o.partial || accepted == 0)) {
    state["state"] = "cancelled";
    state["reason"] = std::to_string(refused.size()) + " hosts refused or did not answer";
    if (!settle(etcd, keys, plan.run, state, err)) return 1;
    err << "run " << plan.run << ": cancelled, no host started"
        << (accepted ? " (--partial starts the hosts that accepted)" : "") << '\n';
    return 1;
  }
  // Answers that came late may have eaten the lead: never a start time in the past.
  start_ns = std::max(start_ns, start_time(std::chrono::seconds(3)));
  state["start_ns"] = start_ns;
  state["start"] = utc_text(start_ns);
  for (const HostView* h : refused)
    state["excluded"].push_back(h->name);
  if (!settle(etcd, keys, plan.run, state, err)) return 1;
  out << "run " << plan.run << ": go, " << accepted << " hosts start at " << utc_text(start_ns)
      << '\n';
  return 0;
}

}  // namespace rocecap::fleet
