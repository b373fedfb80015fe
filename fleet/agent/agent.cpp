#include "fleet/agent/agent.hpp"

#include <fmt/core.h>
#include <signal.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "config/units.hpp"
#include "fleet/agent/local_run.hpp"
#include "fleet/keys.hpp"
#include "rundir/atomic_write.hpp"
#include "rundir/utc_time.hpp"

namespace rocecap::fleet {
namespace {

using nlohmann::json;
using Clock = std::chrono::system_clock;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

std::string utc_now() {
  return rundir::iso8601_utc(now_ns());
}

template <typename... Args>
void log(fmt::format_string<Args...> f, Args&&... args) {
  fmt::print(stderr, "{} rocecap-agent: {}\n", utc_now(),
             fmt::format(f, std::forward<Args>(args)...));
}

json parse_or_null(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  return j.is_discarded() ? json() : j;
}

// The output lines of `rocecapd --check-config` that are problems (file:line:col: ...).
std::vector<std::string> problem_lines(const std::string& output) {
  std::vector<std::string> lines;
  std::size_t at = 0;
  while (at < output.size() && lines.size() < 200) {
    const std::size_t nl = std::min(output.find('\n', at), output.size());
    if (nl > at) lines.push_back(output.substr(at, nl - at));
    at = nl + 1;
  }
  return lines;
}

}  // namespace

struct Agent::Impl {
  AgentOptions o;
  Keys keys;
  EtcdClient etcd;
  std::optional<LocalRun> run;
  std::string run_state;  // the run's state in etcd as last read (pending, go, ...)
  int64_t lease = 0;
  Clock::time_point last_keepalive, last_status, last_scrape;
  json last_status_value;  // the status last written, without its time
  bool connected = false;
  uint64_t outages = 0;
  json advertised;  // the agents/<host> value last written

  explicit Impl(AgentOptions options) : o(std::move(options)), keys(o.fleet), etcd(o.etcd) {}

  void tick();
  void supervise();
  void sync();
  void ensure_lease();
  void take_assignment();
  void check_new_run(const std::string& name);
  void follow_state();
  void launch_if_due();
  void serve_triggers();
  void publish();
  json status_value() const;
  json agent_value() const;
  void persist() const;
  void judge_from_manifest();
  void sleep_until_next(const std::atomic<bool>& stop) const;
};

void Agent::Impl::persist() const {
  if (!run) return;
  if (std::string e = save_current(o.state_dir, *run); !e.empty()) log("{}", e);
}

// Local, without etcd: has rocecapd ended? Then read its manifest.
void Agent::Impl::supervise() {
  if (!run || !run->daemon) return;
  if (run->phase != Phase::capturing && run->phase != Phase::stopping) return;
  if (const auto code = run->daemon->poll()) {
    run->exit_code = *code;
    try {
      run->manifest = manifest_summary(run->run_dir + "/manifest.json", run->output_dir);
    } catch (const std::exception& e) {
      run->manifest = {{"error", e.what()}};
    }
    const bool ok = *code == 0 || (*code == -1 && run->manifest.value("state", "") == "stopped");
    run->phase = ok ? Phase::stopped : Phase::failed;
    log("run {}: rocecapd (pid {}) ended, exit {}: {}", run->name, run->daemon->pid(), *code,
        to_string(run->phase));
    persist();
  }
}

// The run file as rocecapd gets it: the common start time written in as run.start, so frames
// before it are not part of the run on any host (rocecapd rejects them as before_start) and
// every stream on every host begins with the same frame, however the launches differ.
std::string with_start(const std::string& path, int64_t start_ns) {
  YAML::Node root = YAML::LoadFile(path);
  root["run"]["start"] = config::format_utc_second(start_ns);
  YAML::Emitter out;
  out << root;
  return std::string("# written by rocecap-agent: the run file of this host with run.start\n") +
         out.c_str() + "\n";
}

// rocecapd starts `warmup` before the start time: joined, rings allocated and capturing when
// the first frame of the run arrives.
// The run's end seen only through its manifest (rocecapd ended while no agent watched, e.g. the
// host rebooted): stopped if rocecapd finished it, failed if it stopped in the middle (a
// periodic snapshot, state running) or left none.
void Agent::Impl::judge_from_manifest() {
  try {
    run->manifest = manifest_summary(run->run_dir + "/manifest.json", run->output_dir);
  } catch (const std::exception& e) {
    run->manifest = {{"error", e.what()}};
  }
  run->phase = run->manifest.value("state", "") == "stopped" ? Phase::stopped : Phase::failed;
  log("run {}: rocecapd ended while no agent watched; its manifest says {}: {}", run->name,
      run->manifest.value("state", "nothing"), to_string(run->phase));
}

void Agent::Impl::launch_if_due() {
  if (!run || run->phase != Phase::accepted || run_state != "go" || run->start_ns == 0) return;
  if (now_ns() < run->start_ns - o.warmup.count()) return;
  const std::string log_path = o.state_dir + "/runs/" + run->name + ".log";
  try {
    const std::string started = o.state_dir + "/runs/" + run->name + ".start.yaml";
    if (std::string e =
            rundir::write_file_atomically(started, with_start(run->run_file, run->start_ns));
        !e.empty())
      throw std::runtime_error(e);
    run->run_file = started;
    run->daemon = DaemonProcess::launch({o.rocecapd, "--config", run->run_file}, log_path);
    run->phase = Phase::capturing;
    const int64_t early_ms = (run->start_ns - now_ns()) / 1000000;
    log("run {}: started rocecapd (pid {}), {} ms before the start time {}", run->name,
        run->daemon->pid(), early_ms, config::format_utc_second(run->start_ns));
  } catch (const std::exception& e) {
    run->phase = Phase::failed;
    run->problems = {std::string("cannot start rocecapd: ") + e.what()};
    log("run {}: {}", run->name, run->problems.front());
  }
  persist();
}

void Agent::Impl::tick() {
  supervise();
  launch_if_due();
  try {
    sync();
    if (!connected) log("etcd: connected to {}", etcd.endpoint());
    connected = true;
  } catch (const EtcdError& e) {
    if (connected || outages == 0) {
      ++outages;
      log("etcd: {}{}", e.what(),
          run && run->phase == Phase::capturing ? " (the capture goes on)" : "");
    }
    connected = false;
  }
  launch_if_due();  // a start just learnt from etcd
}

void Agent::Impl::sync() {
  ensure_lease();
  take_assignment();
  if (!run) return;
  follow_state();
  serve_triggers();
  publish();
}

void Agent::Impl::ensure_lease() {
  const auto now = Clock::now();
  if (lease != 0 && now - last_keepalive < std::chrono::seconds(o.lease_ttl) / 3) return;
  if (lease != 0 && !etcd.lease_keepalive(lease)) {
    log("etcd: lease {:x} expired (etcd was out of reach for longer than {} s); a new one", lease,
        o.lease_ttl);
    lease = 0;
  }
  if (lease == 0) {
    lease = etcd.lease_grant(o.lease_ttl);
    advertised = agent_value();
    etcd.put(keys.agent(o.host), advertised.dump(), lease);
    last_status_value = json();  // the status key went with the old lease
  }
  last_keepalive = now;
}

// This host's assignment: the run that `fleet start` named it in.
void Agent::Impl::take_assignment() {
  const auto kv = etcd.get(keys.prefix() + "/assigned/" + o.host);
  if (!kv) return;
  const std::string name = parse_or_null(kv->value).value("run", "");
  if (name.empty() || (run && run->name == name)) return;
  if (run && !ended(run->phase)) {
    log("run {} assigned while run {} is {}: ignored until it ends", name, run->name,
        to_string(run->phase));
    return;
  }
  check_new_run(name);
}

// A run new to this agent: write its run file, check it with rocecapd itself, answer.
void Agent::Impl::check_new_run(const std::string& name) {
  const auto state = etcd.get(keys.state(name));
  const std::string st = state ? parse_or_null(state->value).value("state", "") : "";
  if (st != "pending") return;                      // only a run still being checked is taken up
  if (etcd.get(keys.answer(name, o.host))) return;  // answered before (this agent restarted)
  const auto file = etcd.get(keys.host(name, o.host));
  if (!file) return;
  LocalRun r;
  r.name = name;
  r.run_file = o.state_dir + "/runs/" + name + ".yaml";
  if (std::string e = rundir::write_file_atomically(r.run_file, file->value); !e.empty()) {
    r.problems = {e};
  } else {
    const CommandResult c =
        run_command({o.rocecapd, "--check-config", r.run_file}, o.check_timeout);
    if (c.exit_code != 0) r.problems = problem_lines(c.output);
    if (c.exit_code != 0 && r.problems.empty())
      r.problems = {"rocecapd --check-config exited " + std::to_string(c.exit_code)};
    if (r.problems.empty()) r.problems = read_run_facts(r, true);
  }
  r.phase = r.problems.empty() ? Phase::accepted : Phase::refused;
  log("run {}: {}{}", name, to_string(r.phase),
      r.problems.empty()
          ? ""
          : fmt::format(" ({} problems, first: {})", r.problems.size(), r.problems.front()));
  run = std::move(r);
  run_state = st;
  persist();
}

// The run's state, as the coordinator sets it: go (with the start time), stopping, cancelled.
void Agent::Impl::follow_state() {
  const auto kv = etcd.get(keys.state(run->name));
  if (!kv) return;
  const json s = parse_or_null(kv->value);
  run_state = s.value("state", "");
  if (run_state == "go" && run->start_ns == 0) {
    run->start_ns = s.value("start_ns", int64_t{0});
    persist();
  }
  const bool stop = run_state == "stopping" || run_state == "stopped" || run_state == "cancelled";
  if (!stop) return;
  if (run->phase == Phase::capturing && run->daemon) {
    log("run {}: stop asked: SIGTERM to rocecapd (pid {})", run->name, run->daemon->pid());
    run->daemon->signal(SIGTERM);
    run->phase = Phase::stopping;
    persist();
  } else if (run->phase == Phase::accepted || run->phase == Phase::checking) {
    run->phase = Phase::cancelled;
    log("run {}: {} before it started", run->name, run_state);
    persist();
  }
}

// Each trigger under the run goes to the local rocecapd through `rocecap trigger`; its answer
// (rocecapd's JSON, exit code) is written under the trigger for `fleet trigger` to collect.
void Agent::Impl::serve_triggers() {
  if (run->phase != Phase::capturing) return;
  for (const KeyValue& kv : etcd.get_prefix(keys.triggers(run->name))) {
    const std::string id = Keys::leaf(kv.key, keys.triggers(run->name));
    if (id.empty() || run->triggers_done.count(id)) continue;
    const json t = parse_or_null(kv.value);
    std::vector<std::string> argv = {o.rocecap, "trigger", "--config", run->run_file};
    for (const char* k : {"start", "end", "label"})
      if (t.contains(k)) {
        argv.push_back(std::string("--") + k);
        argv.push_back(t[k].is_string() ? t[k].get<std::string>() : t[k].dump());
      }
    const CommandResult c = run_command(argv, std::chrono::seconds(30));
    const json answer = parse_or_null(c.output);
    etcd.put(keys.trigger_answer(run->name, id, o.host),
             json{{"exit", c.exit_code},
                  {"answer", answer.is_null() ? json(c.output) : answer},
                  {"answered", utc_now()}}
                 .dump());
    log("run {}: trigger {} served, exit {}", run->name, id, c.exit_code);
    run->triggers_done.insert(id);
    persist();
  }
}

json Agent::Impl::status_value() const {
  json s = {{"state", to_string(run->phase)},
            {"pid", run->daemon ? run->daemon->pid() : 0},
            {"adopted", run->daemon && run->daemon->adopted()},
            {"packets", run->counters.packets},
            {"lost_frames", run->counters.lost_frames},
            {"disk_bytes", run->counters.disk_bytes},
            {"updated", utc_now()},
            {"etcd_outages", outages}};
  if (run->exit_code) s["exit"] = *run->exit_code;
  return s;
}

json Agent::Impl::agent_value() const {
  std::string target;  // only while a rocecapd listens: an ended run's target would be down
  const bool live = run && (run->phase == Phase::capturing || run->phase == Phase::stopping);
  if (live && !run->metrics_listen.empty()) {
    target = run->metrics_listen;
    if (target.rfind("0.0.0.0:", 0) == 0) {
      std::string host = o.advertise;
      if (host.empty()) {
        char name[256] = {};
        ::gethostname(name, sizeof name - 1);
        host = name;
      }
      target = host + target.substr(7);
    }
  }
  return {{"host", o.host},
          {"pid", ::getpid()},
          {"version", ROCECAP_AGENT_VERSION},
          {"run", run ? run->name : ""},
          {"metrics", target}};
}

void Agent::Impl::publish() {
  if (!run->answer_published) {
    json a = {{"accepted", run->phase != Phase::refused}, {"answered", utc_now()}};
    if (!run->problems.empty()) a["problems"] = run->problems;
    etcd.put(keys.answer(run->name, o.host), a.dump());
    run->answer_published = true;
    persist();
  }
  if (const json a = agent_value(); a != advertised) {
    etcd.put(keys.agent(o.host), a.dump(), lease);
    advertised = a;
  }
  const auto now = Clock::now();
  if (now - last_scrape >= std::chrono::seconds(1) && run->phase == Phase::capturing) {
    if (auto c = scrape_live_counters(run->metrics_listen)) run->counters = *c;
    last_scrape = now;
  }
  // The lease keeps the key alive, so an unchanged status is written again only every 10 s:
  // an idle fleet does not fill etcd's history with copies.
  json st = status_value();
  json same = st;
  same.erase("updated");
  if (same != last_status_value || now - last_status >= std::chrono::seconds(10)) {
    etcd.put(keys.status(run->name, o.host), st.dump(), lease);
    last_status_value = std::move(same);
    last_status = now;
  }
  const bool done = run->phase == Phase::stopped || run->phase == Phase::failed;
  if (done && !run->manifest_published) {
    json m = run->manifest;
    m["host"] = o.host;
    m["result"] = to_string(run->phase);  // stopped or failed, as the agent judged it
    // -1: an adopted rocecapd, whose exit status no one but init saw.
    if (run->exit_code && *run->exit_code >= 0) m["exit"] = *run->exit_code;
    etcd.put(keys.manifest(run->name, o.host), m.dump());
    run->manifest_published = true;
    persist();
    log("run {}: manifest summary published", run->name);
  }
}

void Agent::Impl::sleep_until_next(const std::atomic<bool>& stop) const {
  auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(o.poll);
  // A launch time inside the next interval: wake for it, not after it.
  if (run && run->phase == Phase::accepted && run_state == "go" && run->start_ns > 0) {
    const int64_t left = run->start_ns - o.warmup.count() - now_ns();
    if (left >= 0 && left < wait.count()) wait = std::chrono::nanoseconds(left);
  }
  const auto until = std::chrono::steady_clock::now() + wait;
  while (!stop.load() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(
        until - std::chrono::steady_clock::now(), std::chrono::milliseconds(50)));
}

Agent::Agent(AgentOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  std::filesystem::create_directories(impl_->o.state_dir + "/runs");
  impl_->run = load_current(impl_->o.state_dir);
  if (auto& r = impl_->run) {
    if (r->daemon)
      log("run {}: adopted rocecapd (pid {}) still running", r->name, r->daemon->pid());
    else
      log("run {}: found {} from before this agent", r->name, to_string(r->phase));
    if (ended(r->phase) && r->phase != Phase::refused && r->phase != Phase::cancelled &&
        !r->manifest_published)
      impl_->judge_from_manifest();
    impl_->persist();
  }
}

Agent::~Agent() = default;

int Agent::run(const std::atomic<bool>& stop) {
  log("fleet {} host {}: etcd {}, state in {}", impl_->o.fleet, impl_->o.host,
      impl_->etcd.endpoint(), impl_->o.state_dir);
  while (!stop.load()) {
    impl_->tick();
    impl_->sleep_until_next(stop);
  }
  if (impl_->run && impl_->run->phase == Phase::capturing)
    log("run {}: leaving rocecapd (pid {}) running; a new agent adopts it", impl_->run->name,
        impl_->run->daemon->pid());
  try {
    if (impl_->lease != 0) impl_->etcd.lease_revoke(impl_->lease);
  } catch (const EtcdError&) {
  }
  return 0;
}

}  // namespace rocecap::fleet
