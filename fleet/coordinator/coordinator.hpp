// What `rocecap fleet start|stop|status|trigger|manifest|prometheus-sd` do (doc/fleet.md).
// They talk to etcd only; the hosts' agents do the rest. Each returns the command's exit code
// and writes what the user reads to `out`, problems to `err`. EtcdError leaves them (the
// command turns it into exit 3: etcd not reachable or refusing).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "fleet/etcd/etcd_client.hpp"
#include "fleet/plan/plan.hpp"

namespace rocecap::fleet {

struct StartOptions {
  bool partial = false;          // start the hosts that accepted even when others refused
  std::chrono::seconds lead{5};  // start time: now + lead, up to a whole second
  std::chrono::seconds answer_timeout{30};  // how long the hosts have to check their run file
};
int fleet_start(EtcdClient& etcd, const Plan& plan, const StartOptions& options, std::ostream& out,
                std::ostream& err);

int fleet_stop(EtcdClient& etcd, const std::string& fleet, const std::string& run,
               std::chrono::seconds wait, std::ostream& out, std::ostream& err);

// Each host: accepted / refused (with its problems) / capturing / stopping / stopped / failed
// / lost, with packets, lost frames, disk bytes. json: one JSON object instead of a table.
int fleet_status(EtcdClient& etcd, const std::string& fleet, const std::string& run, bool json,
                 std::ostream& out, std::ostream& err);

struct TriggerWindow {
  std::string start, end, label;  // as `rocecap trigger` takes them
};
int fleet_trigger(EtcdClient& etcd, const std::string& fleet, const std::string& run,
                  const TriggerWindow& window, std::chrono::seconds wait, std::ostream& out,
                  std::ostream& err);

// The fleet manifest: every host's manifest summary and the totals. output: a file to write
// (atomically), or empty for `out`.
int fleet_manifest(EtcdClient& etcd, const std::string& fleet, const std::string& run,
                   const std::string& output, std::ostream& out, std::ostream& err);

// Prometheus file_sd targets of the live agents' rocecapd metrics endpoints.
int fleet_prometheus_sd(EtcdClient& etcd, const std::string& fleet, const std::string& output,
                        std::ostream& out, std::ostream& err);

}  // namespace rocecap::fleet
