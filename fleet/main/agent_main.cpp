// rocecap-agent: the fleet agent of one capture host (doc/fleet.md, man rocecap-agent(8)).
// Exit 0 after SIGTERM/SIGINT (a running capture is left running), 2 on a usage or
// configuration error.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <iostream>

#include "fleet/agent/agent.hpp"
#include "fleet/agent/agent_config.hpp"
#include "fleet/keys.hpp"

namespace {

std::atomic<bool> g_stop{false};  // the one thing a signal handler may touch

void on_signal(int) {
  g_stop.store(true);
}

std::string this_host() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  std::string s = name;
  return s.substr(0, s.find('.'));
}

}  // namespace

int main(int argc, char** argv) {
  using rocecap::fleet::AgentOptions;
  CLI::App app{
      "rocecap-agent: runs this host's part of fleet observations coordinated in etcd "
      "(doc/fleet.md). Options override the configuration file."};
  std::string config_path, password_file, endpoints;
  AgentOptions o;
  AgentOptions cli;
  int poll_ms = 0;
  app.add_option("--config,-c", config_path,
                 "agent configuration (YAML), e.g. /etc/rocecap/agent.yaml");
  app.add_option("--fleet", cli.fleet, "fleet name (the etcd prefix /rocecap/<fleet>)");
  app.add_option("--host", cli.host, "this host's name in plans (default: the host name)");
  app.add_option("--etcd", endpoints,
                 "etcd endpoints, comma-separated (default http://127.0.0.1:2379)");
  app.add_option("--user", cli.etcd.user, "etcd user (etcd's own authentication)");
  app.add_option("--password-file", password_file, "file holding the etcd user's password");
  app.add_option("--cacert", cli.etcd.ca_file, "CA certificate of the etcd members (TLS)");
  app.add_option("--cert", cli.etcd.cert_file, "client certificate for etcd");
  app.add_option("--key", cli.etcd.key_file, "client certificate's key");
  app.add_option("--state-dir", cli.state_dir, "where run files, logs and current.json live")
      ->default_str(o.state_dir);
  app.add_option("--rocecapd", cli.rocecapd, "rocecapd to run")->default_str(o.rocecapd);
  app.add_option("--rocecap", cli.rocecap, "rocecap (for triggers)")->default_str(o.rocecap);
  app.add_option("--advertise", cli.advertise, "host name for Prometheus targets");
  app.add_option("--lease-ttl", cli.lease_ttl, "seconds before a silent agent is lost")
      ->check(CLI::Range(2, 3600))
      ->default_str("5");
  app.add_option("--poll-ms", poll_ms, "milliseconds between looks at etcd")
      ->check(CLI::Range(50, 10000))
      ->default_str("500");
  CLI11_PARSE(app, argc, argv);
  try {
    if (!config_path.empty()) rocecap::fleet::load_agent_config(config_path, o);
    const AgentOptions d;
    if (!cli.fleet.empty()) o.fleet = cli.fleet;
    if (!cli.host.empty()) o.host = cli.host;
    if (cli.state_dir != d.state_dir) o.state_dir = cli.state_dir;
    if (cli.rocecapd != d.rocecapd) o.rocecapd = cli.rocecapd;
    if (cli.rocecap != d.rocecap) o.rocecap = cli.rocecap;
    if (!cli.advertise.empty()) o.advertise = cli.advertise;
    if (app.count("--lease-ttl")) o.lease_ttl = cli.lease_ttl;
    if (poll_ms) o.poll = std::chrono::milliseconds(poll_ms);
    if (!endpoints.empty()) {
      setenv("ETCDCTL_ENDPOINTS", endpoints.c_str(), 1);
      o.etcd.endpoints = rocecap::fleet::etcd_options_from_environment().endpoints;
    }
    if (o.etcd.endpoints.empty()) o.etcd.endpoints = {"http://127.0.0.1:2379"};
    if (!cli.etcd.user.empty()) o.etcd.user = cli.etcd.user;
    if (!password_file.empty()) o.etcd.password = rocecap::fleet::read_secret_file(password_file);
    for (auto [to, from] : {std::pair{&o.etcd.ca_file, &cli.etcd.ca_file},
                            {&o.etcd.cert_file, &cli.etcd.cert_file},
                            {&o.etcd.key_file, &cli.etcd.key_file}})
      if (!from->empty()) *to = *from;
    if (o.host.empty()) o.host = this_host();
    if (!rocecap::fleet::valid_name(o.fleet))
      throw std::runtime_error(
          "a fleet name ([A-Za-z0-9._-]) is needed: --fleet or fleet: in the configuration");
    if (!rocecap::fleet::valid_name(o.host))
      throw std::runtime_error("host name '" + o.host + "' is not [A-Za-z0-9._-]: give --host");
    struct sigaction sa = {};
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
    signal(SIGPIPE, SIG_IGN);
    rocecap::fleet::Agent agent(o);
    return agent.run(g_stop);
  } catch (const std::exception& e) {
    std::cerr << "rocecap-agent: " << e.what() << '\n';
    return 2;
  }
}
