// A fleet plan: one YAML file describing one observation over several capture hosts
// (doc/fleet.md, "The plan"). It is a run file (run, capture, streams, output, retention,
// metrics, ... as config/ knows them) without capture.interfaces, plus two sections:
//
//   fleet:
//     name: askap            # the etcd key prefix /rocecap/<name>   [required]
//     redundant: [239.17.0.1:36001]   # groups deliberately taken by more than one host
//   hosts:
//     - name: cap1           # unique; the agent's --host
//       interfaces:          # as capture.interfaces in a run file
//         - { name: eth1, capture_cpu: 1, groups: [239.17.0.1:36001] }
//       antennas: [ant1, ant2]   # optional: of streams.antennas; default: all of them
//       output: /data/cap1   # optional: replaces output.directory
//       metrics: 127.0.0.1:9466  # optional: replaces metrics.listen
//
// Fleet rules: host names unique and [A-Za-z0-9._-]; every (group, antenna) pair that any host's
// groups could carry is taken by exactly one host, unless its group is listed in
// fleet.redundant (then by one or more); a host's antennas are names from streams.antennas.
// Each host's run file, as split, must also pass rocecapd's own loader (checked without this
// machine's file systems, interfaces, CPUs or memory: the hosts check those themselves).
// Problems point into the plan: file:line:column and the key path there.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/problem.hpp"

namespace rocecap::fleet {

struct HostPlan {
  std::string name;
  std::string run_file;  // the host's complete run file (YAML text), as `fleet start` writes it
};

struct Plan {
  std::string fleet;  // fleet.name
  std::string run;    // run.name
  std::string text;   // the plan file as read
  std::vector<HostPlan> hosts;
};

struct PlanResult {
  Plan plan;                               // complete only when problems is empty
  std::vector<config::Problem> problems;   // sorted by position
  bool ok() const noexcept { return problems.empty(); }
};

// Never throws; file_name is used in problems.
PlanResult load_plan_string(std::string_view text, const std::string& file_name);
PlanResult load_plan_file(const std::string& path);

}  // namespace rocecap::fleet
