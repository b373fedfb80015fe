// Loader problems of the hosts' run files, led back into the plan.
//
// plan_split.cpp noted, for every node of a run file in document order, the plan position it
// came from. The emitted text, read back, has its nodes in that same order: a problem's
// line:column in the run file is a node's, and so leads to the plan node it came from. Key
// paths are translated as well, for the problems (and the rare position) that need them.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <tuple>

#include "config/loader.hpp"
#include "fleet/plan/plan_parts.hpp"

namespace rocecap::fleet::plan_detail {
namespace {

using config::Pos;
using config::Problem;
using config::to_pos;

constexpr std::size_t kShownHosts = 5;  // named in a problem, then "and 3 more"

bool before(const Pos& a, const Pos& b) {
  return std::tie(a.line, a.column) < std::tie(b.line, b.column);
}

void walk(const YAML::Node& node, std::vector<Pos>& out) {
  out.push_back(to_pos(node.Mark()));
  if (node.IsSequence()) {
    for (const YAML::Node& item : node)
      walk(item, out);
  } else if (node.IsMap()) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      walk(it->first, out);
      walk(it->second, out);
    }
  }
}

// Run-file positions to plan positions, for the nodes of one host's run file.
class PositionMap {
 public:
  PositionMap(const std::string& text, const std::vector<Pos>& origins) {
    std::vector<Pos> emitted;
    walk(YAML::Load(text), emitted);
    if (emitted.size() != origins.size()) return;  // never expected; key paths decide then
    for (std::size_t i = 0; i < emitted.size(); ++i)
      pairs_.emplace_back(emitted[i], origins[i]);
    // Already in order but for equal positions (a block map starts where its first key does);
    // the first of those, the outer node, is the one found.
    std::stable_sort(pairs_.begin(), pairs_.end(),
                     [](const auto& a, const auto& b) { return before(a.first, b.first); });
  }

  std::optional<Pos> find(Pos in_run_file) const {
    const auto it = lower_bound(in_run_file);
    if (it == pairs_.end() || before(in_run_file, it->first)) return std::nullopt;
    return it->second;
  }

  std::optional<int> line(int in_run_file) const {
    const auto it = lower_bound(Pos{in_run_file, 0});
    if (it == pairs_.end() || it->first.line != in_run_file) return std::nullopt;
    return it->second.line;
  }

 private:
  std::vector<std::pair<Pos, Pos>>::const_iterator lower_bound(Pos p) const {
    return std::lower_bound(pairs_.begin(), pairs_.end(), p,
                            [](const auto& entry, const Pos& q) { return before(entry.first, q); });
  }

  std::vector<std::pair<Pos, Pos>> pairs_;
};

// Some loader messages point at another line ("duplicate antenna 'a1' (first at line 14)"):
// those are run-file lines too.
std::string with_plan_lines(const std::string& message, const PositionMap& map) {
  constexpr std::string_view kWord = "line ";
  std::string out;
  std::size_t at = 0;
  for (std::size_t found; (found = message.find(kWord, at)) != std::string::npos;) {
    const std::size_t digits = found + kWord.size();
    std::size_t end = digits;
    while (end < message.size() && message[end] >= '0' && message[end] <= '9')
      ++end;
    out.append(message, at, digits - at);
    int line = 0;
    const auto parsed = std::from_chars(message.data() + digits, message.data() + end, line);
    const auto plan_line = parsed.ec == std::errc{} ? map.line(line) : std::nullopt;
    out += plan_line ? std::to_string(*plan_line) : message.substr(digits, end - digits);
    at = end;
  }
  return out.append(message, at);
}

bool has_prefix(std::string_view path, std::string_view prefix) {
  return path.starts_with(prefix) &&
         (path.size() == prefix.size() || path[prefix.size()] == '.' || path[prefix.size()] == '[');
}

// A run file's key path as the plan's.
std::string plan_path(const HostEntry& host, const HostFile& file, const std::string& path) {
  constexpr std::string_view kInterfaces = "capture.interfaces";
  constexpr std::string_view kAntennas = "streams.antennas[";
  if (has_prefix(path, kInterfaces)) {
    return host.path + ".interfaces" + path.substr(kInterfaces.size());
  }
  if (file.filtered && path.starts_with(kAntennas)) {
    std::size_t item = 0;
    const char* first = path.data() + kAntennas.size();
    const auto [end, ec] = std::from_chars(first, path.data() + path.size(), item);
    if (ec == std::errc{} && item < file.antenna_items.size()) {
      return fmt::format("{}{}{}", kAntennas, file.antenna_items[item], std::string_view(end));
    }
  }
  if (file.own_output &&
      (has_prefix(path, "output.directory") || has_prefix(path, "output.directories"))) {
    return host.path + ".output";
  }
  if (file.own_metrics && has_prefix(path, "metrics.listen")) return host.path + ".metrics";
  return path;
}

// The deepest node along path that the plan has (as Context::position_of takes the nearest
// remembered ancestor); none when it lacks even the first.
std::optional<Pos> position_at(const YAML::Node& root, std::string_view path) {
  YAML::Node node(root);  // reset() below rebinds; assigning would overwrite the plan's nodes
  std::optional<Pos> pos;
  while (!path.empty()) {
    if (path.front() == '.') path.remove_prefix(1);
    if (path.starts_with('[')) {
      const std::size_t close = path.find(']');
      std::size_t index = 0;
      if (close == std::string_view::npos ||
          std::from_chars(path.data() + 1, path.data() + close, index).ec != std::errc{} ||
          !node.IsSequence() || index >= node.size()) {
        return pos;
      }
      const YAML::Node& list = node;
      node.reset(list[index]);
      pos = to_pos(node.Mark());
      path.remove_prefix(close + 1);
      continue;
    }
    const std::size_t cut = std::min(path.find('.'), path.find('['));
    const auto found = find_key(node, path.substr(0, cut));
    if (!found) return pos;
    node.reset(found->value);
    pos = to_pos(found->value.IsNull() ? found->key.Mark() : found->value.Mark());
    path.remove_prefix(cut == std::string_view::npos ? path.size() : cut);
  }
  return pos;
}

}  // namespace

void HostProblems::add(Problem problem, std::size_t host) {
  const auto key = std::make_tuple(problem.line, problem.column, problem.key_path, problem.message);
  const auto [it, fresh] = index_.emplace(key, found_.size());
  if (fresh) found_.push_back(Found{std::move(problem), {}});
  auto& hosts = found_[it->second].hosts;
  if (hosts.empty() || hosts.back() != host) hosts.push_back(host);
}

void HostProblems::check(const PlanInput& plan, std::size_t k, const HostFile& file) {
  const HostEntry& host = plan.hosts[k];
  const auto result =
      config::load_string(file.text, plan.file + "#" + host.name, config::snapshot_host());
  if (result.ok()) return;
  const PositionMap map(file.text, file.origins);
  for (const Problem& p : result.problems) {
    const std::string path = plan_path(host, file, p.key_path);
    std::optional<Pos> pos = p.line > 0 ? map.find(Pos{p.line, p.column}) : std::nullopt;
    if (!pos) pos = position_at(plan.root, path);
    if (!pos) pos = host.pos;
    add(Problem{plan.file, pos->line, pos->column, path, with_plan_lines(p.message, map)}, k);
  }
}

// A problem is named with the hosts it concerns, unless every host checked has it (the common
// part) and it is not in a host's entry.
void HostProblems::append_to(std::vector<Problem>& out, const PlanInput& plan,
                             std::size_t checked) const {
  for (const Found& f : found_) {
    Problem p = f.problem;
    if (p.key_path.starts_with("hosts[") || f.hosts.size() < checked) {
      std::vector<std::string_view> names;
      for (const std::size_t h : f.hosts)
        names.push_back(plan.hosts[h].name);
      p.message = fmt::format("{} {}: {}", names.size() == 1 ? "host" : "hosts",
                              join_words(names, kShownHosts), p.message);
    }
    out.push_back(std::move(p));
  }
}

}  // namespace rocecap::fleet::plan_detail
