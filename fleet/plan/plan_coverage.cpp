// The fleet rules between hosts: who takes which (group, antenna) pair.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "config/units.hpp"
#include "fleet/plan/plan_parts.hpp"

namespace rocecap::fleet::plan_detail {
namespace {

// Messages name this many antennas or hosts, then say how many more: a plan may have
// thousands of antennas, and one problem per antenna would bury the rest.
constexpr std::size_t kShownNames = 5;

// A host listing the group, and where it first does.
struct Taker {
  std::size_t host = 0;
  const GroupUse* use = nullptr;
};

bool takes(const HostEntry& host, std::size_t antenna) {
  return !host.takes || (*host.takes)[antenna];
}

std::string antennas_phrase(const PlanInput& plan, const std::vector<std::size_t>& items) {
  if (items.size() == 1) return fmt::format("antenna {} is", plan.antennas.names[items[0]]);
  if (items.size() == plan.antennas.counted.size()) {
    return fmt::format("all {} antennas are", items.size());
  }
  std::vector<std::string_view> names;
  for (const std::size_t i : items)
    names.push_back(plan.antennas.names[i]);
  return fmt::format("antennas {} are", join_words(names, kShownNames));
}

std::string hosts_phrase(const PlanInput& plan, const std::vector<Taker>& takers,
                         const std::vector<std::size_t>& which) {
  std::vector<std::string_view> names;
  for (const std::size_t t : which)
    names.push_back(plan.hosts[takers[t].host].name);
  return join_words(names, kShownNames);
}

void report_untaken(config::Context& ctx, const PlanInput& plan, uint64_t group,
                    const std::vector<Taker>& takers, const std::vector<std::size_t>& items) {
  std::vector<std::size_t> all(takers.size());
  for (std::size_t t = 0; t < all.size(); ++t)
    all[t] = t;
  ctx.report(plan.hosts_pos, "hosts",
             fmt::format("group {}: {} taken by no host ({} {} the group, but not {})",
                         group_text(group), antennas_phrase(plan, items),
                         hosts_phrase(plan, takers, all), takers.size() == 1 ? "lists" : "list",
                         items.size() == 1 ? "that antenna" : "those antennas"));
}

// At the second host's group: the first host is where the pair was meant to go, most likely.
void report_shared(config::Context& ctx, const PlanInput& plan, uint64_t group,
                   const std::vector<Taker>& takers, const std::vector<std::size_t>& which,
                   const std::vector<std::size_t>& items) {
  const GroupUse& second = *takers[which[1]].use;
  ctx.report(second.pos, second.path,
             fmt::format("group {}: {} taken by {}; list the group in fleet.redundant if that is "
                         "deliberate",
                         group_text(group), antennas_phrase(plan, items),
                         hosts_phrase(plan, takers, which)));
}

// One problem per set of hosts (none, or several) that take the same antennas of the group,
// instead of one per antenna. True when some antenna is taken by more than one host.
bool check_group(config::Context& ctx, const PlanInput& plan, uint64_t group,
                 const std::vector<Taker>& takers, bool redundant) {
  std::map<std::vector<std::size_t>, std::vector<std::size_t>> antennas_by_takers;
  std::vector<std::size_t> which;
  bool shared = false;
  for (const std::size_t antenna : plan.antennas.counted) {
    which.clear();
    for (std::size_t t = 0; t < takers.size(); ++t) {
      if (takes(plan.hosts[takers[t].host], antenna)) which.push_back(t);
    }
    if (which.size() == 1) continue;
    shared = shared || which.size() > 1;
    if (which.size() > 1 && redundant) continue;
    antennas_by_takers[which].push_back(antenna);
  }
  for (const auto& [set, items] : antennas_by_takers) {
    if (set.empty()) {
      report_untaken(ctx, plan, group, takers, items);
    } else {
      report_shared(ctx, plan, group, takers, set, items);
    }
  }
  return shared;
}

// A redundant group no antenna of which is taken twice is a leftover from an earlier plan, or
// a second host that was meant to take it and does not.
void check_redundant(config::Context& ctx, const PlanInput& plan, const GroupUse& r,
                     const std::vector<Taker>* takers) {
  const std::string group = group_text(r.key);
  if (takers == nullptr) {
    ctx.report(r.pos, r.path,
               fmt::format("group {} is taken by no host; remove it from fleet.redundant", group));
  } else if (takers->size() == 1) {
    ctx.report(r.pos, r.path,
               fmt::format("group {} is taken by {} only; remove it from fleet.redundant or add "
                           "it to a second host",
                           group, plan.hosts[takers->front().host].name));
  } else {
    ctx.report(r.pos, r.path,
               fmt::format("no antenna of group {} is taken by more than one host; remove it "
                           "from fleet.redundant",
                           group));
  }
}

}  // namespace

std::string group_text(uint64_t key) {
  return fmt::format("{}:{}", config::format_ipv4(static_cast<uint32_t>(key >> 16)),
                     static_cast<uint16_t>(key & 0xFFFF));
}

std::string join_words(const std::vector<std::string_view>& words, std::size_t shown) {
  const std::size_t listed = words.size() > shown ? shown : words.size();
  std::string out;
  for (std::size_t i = 0; i < listed; ++i) {
    if (i > 0) out += i + 1 == words.size() ? " and " : ", ";
    out += words[i];
  }
  if (listed < words.size()) out += fmt::format(" and {} more", words.size() - listed);
  return out;
}

void check_coverage(config::Context& ctx, const PlanInput& plan) {
  std::vector<uint64_t> order;  // groups as the plan first lists them, for a stable report
  std::unordered_map<uint64_t, std::vector<Taker>> takers;
  for (std::size_t h = 0; h < plan.hosts.size(); ++h) {
    for (const GroupUse& use : plan.hosts[h].groups) {
      auto& list = takers[use.key];
      if (list.empty()) order.push_back(use.key);
      list.push_back(Taker{h, &use});
    }
  }
  std::unordered_map<uint64_t, bool> shared;
  for (const uint64_t group : order) {
    const bool redundant = std::any_of(plan.redundant.begin(), plan.redundant.end(),
                                       [&](const GroupUse& r) { return r.key == group; });
    shared[group] = check_group(ctx, plan, group, takers[group], redundant);
  }
  for (const GroupUse& r : plan.redundant) {
    const auto found = takers.find(r.key);
    if (found == takers.end()) {
      check_redundant(ctx, plan, r, nullptr);
    } else if (!shared[r.key]) {
      check_redundant(ctx, plan, r, &found->second);
    }
  }
}

}  // namespace rocecap::fleet::plan_detail
