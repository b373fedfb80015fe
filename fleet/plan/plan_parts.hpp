// Internal to fleet/plan: what reading the plan (plan.cpp) hands to the fleet rules
// (plan_coverage.cpp) and to the split (plan_split.cpp).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "config/problem.hpp"
#include "config/yaml_walk.hpp"
#include "fleet/plan/plan.hpp"

namespace rocecap::fleet::plan_detail {

// streams.antennas as the plan lists them. The entries themselves are the loader's to check;
// the plan only needs their names.
struct AntennaList {
  std::vector<std::string> names;                      // per item; "" without a usable name
  std::unordered_map<std::string, std::size_t> first;  // name -> the item that first has it
  // The items the fleet rules count: each named antenna once (a repeated name is the loader's
  // problem, reported in every host's run file).
  std::vector<std::size_t> counted;
};

// A multicast group where the plan writes it.
struct GroupUse {
  uint64_t key = 0;  // address << 16 | port
  std::string path;  // "hosts[1].interfaces[0].groups[2]"
  config::Pos pos;
};

struct HostEntry {
  std::string name;  // "" when the entry has no usable name
  std::string path;  // "hosts[1]"
  config::Pos pos;
  YAML::Node node;
  std::optional<std::vector<bool>> takes;  // per streams.antennas item; none: every antenna
  std::vector<GroupUse> groups;            // each group once, where the host first lists it
  // Name, interfaces, antennas, output and metrics are usable: its run file can be built and
  // checked. An entry with a problem of its own is not also run through the loader, which
  // would only repeat the problem in other words.
  bool splittable = false;
};

struct PlanInput {
  std::string file;
  std::size_t text_size = 0;
  YAML::Node root;
  std::string fleet_name;
  AntennaList antennas;
  config::Pos hosts_pos;  // the hosts list: where a pair no host takes is reported
  std::vector<HostEntry> hosts;
  std::vector<GroupUse> redundant;
};

// A host's run file as split, with what leads its problems back into the plan.
struct HostFile {
  std::string text;
  // The plan position of each node of the run file (map keys included), in document order.
  std::vector<config::Pos> origins;
  // With the host's own antennas list: the plan's streams.antennas item of each item kept.
  std::vector<std::size_t> antenna_items;
  bool filtered = false;
  bool own_output = false;
  bool own_metrics = false;
};

// The loader's problems with the hosts' run files, in the plan's terms; the same problem in
// several run files (one of the common part) is one problem.
class HostProblems {
 public:
  // Checks host k's run file with rocecapd's loader, without host checks (each host makes
  // those itself), and keeps its problems.
  void check(const PlanInput& plan, std::size_t k, const HostFile& file);
  // Those that not all of the `checked` hosts have, or that are in a host's entry, are named
  // with their hosts ("host cap2: ...").
  void append_to(std::vector<config::Problem>& out, const PlanInput& plan,
                 std::size_t checked) const;

 private:
  void add(config::Problem problem, std::size_t host);

  struct Found {
    config::Problem problem;
    std::vector<std::size_t> hosts;  // indices into PlanInput::hosts
  };
  std::map<std::tuple<int, int, std::string, std::string>, std::size_t> index_;
  std::vector<Found> found_;
};

// "239.17.0.1:36001".
std::string group_text(uint64_t key);

// The value of the first `key` of a map (yaml-cpp's lookups, and so the loader, take the first
// of repeated keys), with its key node; none when node is not a map or lacks it.
struct KeyValue {
  YAML::Node key;
  YAML::Node value;
};
std::optional<KeyValue> find_key(const YAML::Node& map, std::string_view key);

// "a", "a and b", "a, b and c"; past `shown` words: "a, b, c and 7 more".
std::string join_words(const std::vector<std::string_view>& words, std::size_t shown);

// Fleet rules: every (group, antenna) pair any host's groups carry is taken by exactly one host,
// or by one or more when its group is in fleet.redundant; a redundant group is taken twice.
void check_coverage(config::Context& ctx, const PlanInput& plan);

// Each host's run file into hosts (every entry, in plan order; empty for an entry that is not
// splittable), checked with rocecapd's loader without host checks, its problems mapped into the
// plan and appended to problems.
void split_and_check(const PlanInput& plan, std::vector<HostPlan>& hosts,
                     std::vector<config::Problem>& problems);

}  // namespace rocecap::fleet::plan_detail
