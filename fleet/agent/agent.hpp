// rocecap-agent: one per capture host, beside rocecapd (doc/fleet.md, "The agent").
//
// One thread, one loop every `poll`: supervise the local rocecapd (without etcd), then talk to
// etcd (lease, this host's assignment, the run's state, triggers, status). Whatever etcd does,
// a running capture goes on: etcd errors only mark the agent disconnected, and what it could
// not publish (answer, manifest summary, trigger answers) is published once etcd answers again.
// What the agent started is written to <state_dir>/current.json, so a restarted agent adopts
// the rocecapd it finds still running instead of starting a second one.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "fleet/etcd/etcd_client.hpp"

namespace rocecap::fleet {

struct AgentOptions {
  EtcdOptions etcd;
  std::string fleet, host;
  std::string state_dir = "/var/lib/rocecap/agent";
  std::string rocecapd = "/usr/sbin/rocecapd";
  std::string rocecap = "/usr/bin/rocecap";
  // Host name in this agent's metrics target when rocecapd listens on a wildcard address;
  // empty: this machine's host name.
  std::string advertise;
  int lease_ttl = 5;  // seconds: a dead agent's status disappears after this long
  std::chrono::milliseconds poll{500};
  std::chrono::seconds check_timeout{60};
  // rocecapd is started this long before the run's start time (run.start holds the frames
  // before it back), so it is capturing when the first frame of the run arrives.
  std::chrono::nanoseconds warmup = std::chrono::seconds(2);
};

class Agent {
 public:
  explicit Agent(AgentOptions options);
  ~Agent();
  // Until `stop` is set (SIGTERM, SIGINT). The capture it supervises is left running.
  int run(const std::atomic<bool>& stop);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rocecap::fleet
