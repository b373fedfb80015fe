// `rocecap fleet ...`: one observation over many capture hosts, coordinated through etcd
// (doc/fleet.md). check reads a plan; the rest talk to etcd only (never to a host).
// Exit codes: 0 done; 1 refused or incomplete (the output says which host and why); 2 usage or
// plan problems; 3 etcd not reachable or refusing the request.
#include <iostream>
#include <memory>
#include <set>

#include "fleet/agent/agent_config.hpp"
#include "fleet/coordinator/coordinator.hpp"
#include "fleet/keys.hpp"
#include "fleet/plan/plan.hpp"
#include "tools/command.hpp"

namespace rocecap::tools {
namespace {

using namespace rocecap::fleet;

constexpr const char* kExitCodes =
    "Exit codes: 0 done; 1 refused or incomplete (the output names the host and why); 2 usage "
    "or plan problems; 3 etcd not reachable or refusing (its message)";

struct FleetArgs {
  std::string plan, fleet, run, endpoints, user, password_file, cacert, cert, key, output;
  std::string start, end, label;
  bool partial = false, json = false;
  int lead = 5, answer_timeout = 30, wait = 60, trigger_wait = 10;
};

// Loads the plan or prints its problems; nullopt: exit 2.
std::optional<Plan> plan_or_problems(const std::string& path) {
  PlanResult r = load_plan_file(path);
  for (const config::Problem& p : r.problems)
    std::cerr << config::format_problem(p) << '\n';
  if (!r.ok()) {
    std::cerr << path << ": " << r.problems.size() << " problems\n";
    return std::nullopt;
  }
  return std::move(r.plan);
}

// --fleet/--run, or the plan's.
bool resolve_names(FleetArgs& a) {
  if (!a.plan.empty() && (a.fleet.empty() || a.run.empty())) {
    auto p = plan_or_problems(a.plan);
    if (!p) return false;
    if (a.fleet.empty()) a.fleet = p->fleet;
    if (a.run.empty()) a.run = p->run;
  }
  for (const auto& [what, v] : {std::pair{"--fleet", &a.fleet}, {"--run", &a.run}})
    if (!valid_name(*v)) {
      std::cerr << "rocecap fleet: " << what
                << " (or --plan) is needed: a name of [A-Za-z0-9._-]\n";
      return false;
    }
  return true;
}

EtcdOptions etcd_options(const FleetArgs& a) {
  if (!a.endpoints.empty()) setenv("ETCDCTL_ENDPOINTS", a.endpoints.c_str(), 1);
  EtcdOptions o = etcd_options_from_environment();
  if (!a.user.empty()) o.user = a.user;
  if (!a.password_file.empty()) o.password = read_secret_file(a.password_file);
  if (!a.cacert.empty()) o.ca_file = a.cacert;
  if (!a.cert.empty()) o.cert_file = a.cert;
  if (!a.key.empty()) o.key_file = a.key;
  return o;
}

int check(const FleetArgs& a) {
  auto p = plan_or_problems(a.plan);
  if (!p) return 2;
  std::cout << a.plan << ": fleet " << p->fleet << ", run " << p->run << ", " << p->hosts.size()
            << " hosts: OK\n";
  for (const HostPlan& h : p->hosts)
    std::cout << "  " << h.name << '\n';
  return 0;
}

// The commands that need etcd, with its errors turned into exit 3.
template <typename F>
int with_etcd(FleetArgs& a, bool names, F&& f) {
  try {
    if (names && !resolve_names(a)) return 2;
    EtcdClient etcd(etcd_options(a));
    return f(etcd);
  } catch (const EtcdError& e) {
    std::cerr << "rocecap fleet: etcd: " << e.what() << '\n';
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "rocecap fleet: " << e.what() << '\n';
    return 2;
  }
}

void etcd_flags(CLI::App* c, FleetArgs& a) {
  c->add_option("--etcd", a.endpoints,
                "etcd endpoints, comma-separated (default: $ETCDCTL_ENDPOINTS, else "
                "http://127.0.0.1:2379)");
  c->add_option("--user", a.user, "etcd user (also $ETCDCTL_USER=user:password)");
  c->add_option("--password-file", a.password_file, "file with the etcd user's password");
  c->add_option("--cacert", a.cacert, "CA of the etcd members (also $ETCDCTL_CACERT)");
  c->add_option("--cert", a.cert, "client certificate (also $ETCDCTL_CERT)");
  c->add_option("--key", a.key, "client key (also $ETCDCTL_KEY)");
}

void run_flags(CLI::App* c, FleetArgs& a) {
  etcd_flags(c, a);
  c->footer(kExitCodes);
  c->add_option("--plan", a.plan, "the plan: its fleet.name and run.name")
      ->check(CLI::ExistingFile);
  c->add_option("--fleet", a.fleet, "fleet name");
  c->add_option("--run", a.run, "run name");
}

}  // namespace

void add_fleet_command(CLI::App& app, Action& action) {
  auto a = std::make_shared<FleetArgs>();
  CLI::App* fleet = app.add_subcommand(
      "fleet", "One observation over many capture hosts through etcd (doc/fleet.md)");
  fleet->require_subcommand(1);
  fleet->footer(kExitCodes);
  auto set = [&action](std::function<int()> f) { action = std::move(f); };

  CLI::App* c =
      fleet->add_subcommand("check", "Check a plan: fleet rules and every host's run file");
  c->add_option("plan", a->plan, "the plan (YAML)")->required();
  c->footer(kExitCodes);
  c->callback([a, set] { set([a] { return check(*a); }); });

  c = fleet->add_subcommand("start", "Write a plan's run files to etcd and start it on every host");
  c->add_option("plan", a->plan, "the plan (YAML)")->required()->check(CLI::ExistingFile);
  etcd_flags(c, *a);
  c->footer(kExitCodes);
  c->add_flag("--partial", a->partial, "start the hosts that accepted even if some refused");
  c->add_option("--lead", a->lead, "seconds from now to the start time")
      ->default_val(5)
      ->check(CLI::Range(1, 3600));
  c->add_option("--answer-timeout", a->answer_timeout, "seconds the hosts have to answer")
      ->default_val(30)
      ->check(CLI::Range(1, 3600));
  c->callback([a, set] {
    set([a] {
      auto p = plan_or_problems(a->plan);
      if (!p) return 2;
      StartOptions o{a->partial, std::chrono::seconds(a->lead),
                     std::chrono::seconds(a->answer_timeout)};
      return with_etcd(*a, false,
                       [&](EtcdClient& e) { return fleet_start(e, *p, o, std::cout, std::cerr); });
    });
  });

  c = fleet->add_subcommand("stop", "Stop a run on every host and wait for their manifests");
  run_flags(c, *a);
  c->add_option("--wait", a->wait, "seconds to wait for the hosts")->default_val(60);
  c->callback([a, set] {
    set([a] {
      return with_etcd(*a, true, [&](EtcdClient& e) {
        return fleet_stop(e, a->fleet, a->run, std::chrono::seconds(a->wait), std::cout, std::cerr);
      });
    });
  });

  c = fleet->add_subcommand("status", "Each host's state, packets, lost frames and disk use");
  run_flags(c, *a);
  c->add_flag("--json", a->json, "one JSON object");
  c->callback([a, set] {
    set([a] {
      return with_etcd(*a, true, [&](EtcdClient& e) {
        return fleet_status(e, a->fleet, a->run, a->json, std::cout, std::cerr);
      });
    });
  });

  c = fleet->add_subcommand("trigger", "Dump a time window on every capturing host");
  run_flags(c, *a);
  c->add_option("--start", a->start, "window start: UTC text or Unix ns")->required();
  c->add_option("--end", a->end, "window end (exclusive)")->required();
  c->add_option("--label", a->label, "a name for the dump directories");
  c->add_option("--wait", a->trigger_wait, "seconds to wait for the hosts' answers")
      ->default_val(10);
  c->callback([a, set] {
    set([a] {
      return with_etcd(*a, true, [&](EtcdClient& e) {
        return fleet_trigger(e, a->fleet, a->run, {a->start, a->end, a->label},
                             std::chrono::seconds(a->trigger_wait), std::cout, std::cerr);
      });
    });
  });

  c = fleet->add_subcommand("manifest", "Merge the hosts' manifest summaries into one");
  run_flags(c, *a);
  c->add_option("--output,-o", a->output, "write it to this file (default: print)");
  c->callback([a, set] {
    set([a] {
      return with_etcd(*a, true, [&](EtcdClient& e) {
        return fleet_manifest(e, a->fleet, a->run, a->output, std::cout, std::cerr);
      });
    });
  });

  c = fleet->add_subcommand("prometheus-sd", "Prometheus file_sd targets of the live agents");
  c->footer(kExitCodes);
  etcd_flags(c, *a);
  c->add_option("--fleet", a->fleet, "fleet name")->required();
  c->add_option("--output,-o", a->output, "the file_sd file (default: print)");
  c->callback([a, set] {
    set([a] {
      return with_etcd(*a, false, [&](EtcdClient& e) {
        if (!valid_name(a->fleet)) throw std::runtime_error("--fleet: not a fleet name");
        return fleet_prometheus_sd(e, a->fleet, a->output, std::cout, std::cerr);
      });
    });
  });
}

}  // namespace rocecap::tools
