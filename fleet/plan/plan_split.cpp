// Splitting a plan into one run file per host, each checked with rocecapd's own loader.
//
// A loader problem points at a line:column of a run file nobody has looked at. So the run file
// is built node by node from the plan's nodes, noting each one's plan position in document
// order (HostFile::origins), for plan_problems.cpp to lead the problem back into the plan.
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "config/loader.hpp"
#include "config/schema_keys.hpp"
#include "fleet/plan/plan_parts.hpp"

namespace rocecap::fleet::plan_detail {
namespace {

using config::Pos;
using config::Problem;
using config::to_pos;

// The copy follows aliases, which can repeat a subtree many times over or, pointing into their
// own anchor, forever; so it is bounded. A run file needs a few levels. Without aliases a plan
// of n bytes has fewer than n / 2 nodes (each takes a character and a separator), and a host's
// run file no more than the plan: n nodes leave aliases room to double that.
constexpr int kMaxDepth = 64;

std::size_t max_nodes(const PlanInput& plan) {
  return plan.text_size + 1024;
}

struct TooLarge {};

// Makes run-file nodes, noting the plan position of each (map keys included) in the order the
// emitter writes them. A node is placed in its parent before it is filled: yaml-cpp merges a
// child's node set into its parent's on insertion, so a subtree filled first would be merged
// again at every level above it (for 200k antennas 2.5 s instead of 0.45 s, per host).
class Builder {
 public:
  explicit Builder(std::size_t max_nodes) : max_nodes_(max_nodes) {}

  // The node for src, empty if it is a map or list.
  YAML::Node shell(const YAML::Node& src, int depth) {
    if (depth > kMaxDepth) throw TooLarge{};
    note(to_pos(src.Mark()));
    if (src.IsScalar()) return YAML::Node(src.Scalar());
    if (src.IsSequence()) return collection(YAML::NodeType::Sequence, src.Style());
    if (src.IsMap()) return collection(YAML::NodeType::Map, src.Style());
    return YAML::Node(YAML::NodeType::Null);
  }

  void fill(YAML::Node& out, const YAML::Node& src, int depth) {
    if (src.IsSequence()) {
      for (const YAML::Node& item : src)
        append(out, item, depth + 1);
    } else if (src.IsMap()) {
      for (auto it = src.begin(); it != src.end(); ++it)
        add(out, it->first, it->second, depth + 1);
    }
  }

  YAML::Node copy(const YAML::Node& src, int depth) {
    YAML::Node out = shell(src, depth);
    fill(out, src, depth);
    return out;
  }

  void append(YAML::Node& list, const YAML::Node& src, int depth) {
    YAML::Node out = shell(src, depth);
    list.push_back(out);
    fill(out, src, depth);
  }

  // Key before value: the order they are emitted in.
  void add(YAML::Node& map, const YAML::Node& key, const YAML::Node& value, int depth) {
    put(map, copy(key, depth), value, depth);
  }

  void put(YAML::Node& map, const YAML::Node& key, const YAML::Node& value, int depth) {
    YAML::Node out = shell(value, depth);
    map.force_insert(key, out);
    fill(out, value, depth);
  }

  // A map or list that the plan has in another shape, placed at origin.
  YAML::Node make(YAML::NodeType::value type, Pos origin, YAML::EmitterStyle::value style) {
    note(origin);
    return collection(type, style);
  }

  YAML::Node scalar(const std::string& text, Pos origin) {
    note(origin);
    return YAML::Node(text);
  }

  std::vector<Pos> origins;

 private:
  static YAML::Node collection(YAML::NodeType::value type, YAML::EmitterStyle::value style) {
    YAML::Node out(type);
    out.SetStyle(style);
    return out;
  }

  void note(Pos pos) {
    if (origins.size() >= max_nodes_) throw TooLarge{};
    origins.push_back(pos);
  }

  std::size_t max_nodes_;
};

// A key of the run file whose value is a host entry's.
struct HostValue {
  std::string key;  // in the run file
  KeyValue from;    // in the host's entry
};

std::optional<HostValue> host_value(const HostEntry& host, std::string_view entry_key,
                                    std::string run_file_key) {
  auto found = find_key(host.node, entry_key);
  if (!found) return std::nullopt;
  return HostValue{std::move(run_file_key), std::move(*found)};
}

std::string printable(std::string text) {
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = '?';
  }
  return text;
}

std::string emit(const YAML::Node& doc, const std::string& header) {
  YAML::Emitter out;
  out << YAML::Comment(header) << doc;
  if (!out.good()) throw std::runtime_error("cannot write a run file: " + out.GetLastError());
  return std::string(out.c_str()) + "\n";
}

class Splitter {
 public:
  Splitter(const PlanInput& plan, const HostEntry& host)
      : plan_(plan),
        host_(host),
        interfaces_(host_value(host, "interfaces", "interfaces")),
        output_(host_value(host, "output", "directory")),
        metrics_(host_value(host, "metrics", "listen")),
        builder_(max_nodes(plan)) {}

  HostFile build() {
    const YAML::Node doc = root();
    file_.origins = std::move(builder_.origins);
    file_.own_output = output_.has_value();
    file_.own_metrics = metrics_.has_value();
    file_.text = emit(doc, printable(fmt::format("run file for host {} of fleet {}, split from {}",
                                                 host_.name, plan_.fleet_name, plan_.file)));
    return std::move(file_);
  }

 private:
  static bool section(std::string_view key) {
    return key == "capture" || key == "streams" || key == "output" || key == "metrics";
  }

  static bool run_file_key(std::string_view key) {
    return std::find(std::begin(config::schema::kRoot), std::end(config::schema::kRoot), key) !=
           std::end(config::schema::kRoot);
  }

  YAML::Node root() {
    const YAML::Node& src = plan_.root;
    const Pos root_pos = to_pos(src.Mark());
    YAML::Node out = builder_.make(YAML::NodeType::Map, root_pos, src.Style());
    std::vector<std::string> done;  // sections given the host's values (the first of each)
    for (auto it = src.begin(); it != src.end(); ++it) {
      const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string();
      // Keys the plan's own check found wrong stay out, and with them whatever aliases under
      // them might expand to.
      if (!run_file_key(key)) continue;
      if (!section(key) || std::find(done.begin(), done.end(), key) != done.end()) {
        builder_.add(out, it->first, it->second, 1);
        continue;
      }
      done.push_back(key);
      section_value(out, builder_.copy(it->first, 1), key, it->second);
    }
    add_missing_sections(out, done, root_pos);
    return out;
  }

  void section_value(YAML::Node& out, const YAML::Node& k, const std::string& key,
                     const YAML::Node& src) {
    if (key == "capture") {
      with_host_value(out, k, src, {"interfaces"}, *interfaces_);
    } else if (key == "streams" && host_.takes && src.IsMap()) {
      streams(out, k, src);
    } else if (key == "output" && output_) {
      with_host_value(out, k, src, {"directory", "directories"}, *output_);
    } else if (key == "metrics" && metrics_) {
      with_host_value(out, k, src, {"listen"}, *metrics_);
    } else {
      builder_.put(out, k, src, 1);
    }
  }

  // A section the plan leaves out but the host's values need (a plan without capture still
  // gets each host's interfaces there, so that the loader reports what else capture lacks).
  void add_missing_sections(YAML::Node& out, const std::vector<std::string>& done, Pos root_pos) {
    auto missing = [&](std::string_view key) {
      return std::find(done.begin(), done.end(), key) == done.end();
    };
    if (missing("capture")) add_section(out, "capture", root_pos, *interfaces_);
    if (missing("output") && output_) {
      add_section(out, "output", to_pos(output_->from.key.Mark()), *output_);
    }
    if (missing("metrics") && metrics_) {
      add_section(out, "metrics", to_pos(metrics_->from.key.Mark()), *metrics_);
    }
  }

  void add_section(YAML::Node& out, const std::string& key, Pos origin, const HostValue& value) {
    const YAML::Node k = builder_.scalar(key, origin);
    YAML::Node v = builder_.make(YAML::NodeType::Map, origin, YAML::EmitterStyle::Block);
    out.force_insert(k, v);
    add_host_value(v, value);
  }

  void add_host_value(YAML::Node& map, const HostValue& value) {
    const YAML::Node k = builder_.scalar(value.key, to_pos(value.from.key.Mark()));
    builder_.put(map, k, value.from.value, 2);
  }

  // The map with the host's value in place of the first of `keys` (appended when it has none);
  // later ones are left out: a host's output replaces output.directory and output.directories.
  void with_host_value(YAML::Node& out, const YAML::Node& k, const YAML::Node& src,
                       std::initializer_list<std::string_view> keys, const HostValue& value) {
    if (!src.IsMap()) return builder_.put(out, k, src, 1);
    YAML::Node v = builder_.make(YAML::NodeType::Map, to_pos(src.Mark()), src.Style());
    out.force_insert(k, v);
    bool placed = false;
    for (auto it = src.begin(); it != src.end(); ++it) {
      const bool replaced = it->first.IsScalar() &&
                            std::find(keys.begin(), keys.end(), it->first.Scalar()) != keys.end();
      if (!replaced) {
        builder_.add(v, it->first, it->second, 2);
      } else if (!std::exchange(placed, true)) {
        add_host_value(v, value);
      }
    }
    if (!placed) add_host_value(v, value);
  }

  void streams(YAML::Node& out, const YAML::Node& k, const YAML::Node& src) {
    YAML::Node v = builder_.make(YAML::NodeType::Map, to_pos(src.Mark()), src.Style());
    out.force_insert(k, v);
    bool seen = false;  // only the first antennas key is the list the plan's names come from
    for (auto it = src.begin(); it != src.end(); ++it) {
      const bool antennas = it->first.IsScalar() && it->first.Scalar() == "antennas" &&
                            !std::exchange(seen, true) && it->second.IsSequence();
      if (!antennas) {
        builder_.add(v, it->first, it->second, 2);
        continue;
      }
      const YAML::Node list = it->second;
      YAML::Node items = builder_.make(YAML::NodeType::Sequence, to_pos(list.Mark()), list.Style());
      v.force_insert(builder_.copy(it->first, 2), items);
      host_antennas(items, list);
    }
  }

  // The host's items of streams.antennas, as the plan writes them. An item without a usable
  // name stays in every run file, for the loader to report it.
  void host_antennas(YAML::Node& out, const YAML::Node& list) {
    file_.filtered = true;
    std::size_t i = 0;
    for (const YAML::Node& item : list) {
      const std::string& name = plan_.antennas.names.at(i);
      if (name.empty() || (*host_.takes)[plan_.antennas.first.at(name)]) {
        file_.antenna_items.push_back(i);
        builder_.append(out, item, 3);
      }
      ++i;
    }
  }

  const PlanInput& plan_;
  const HostEntry& host_;
  std::optional<HostValue> interfaces_;
  std::optional<HostValue> output_;
  std::optional<HostValue> metrics_;
  Builder builder_;
  HostFile file_;
};

}  // namespace

void split_and_check(const PlanInput& plan, std::vector<HostPlan>& hosts,
                     std::vector<Problem>& problems) {
  HostProblems found;
  std::size_t checked = 0;
  for (std::size_t k = 0; k < plan.hosts.size(); ++k) {
    const HostEntry& host = plan.hosts[k];
    HostPlan& out = hosts.emplace_back(HostPlan{host.name, {}});
    if (!host.splittable) continue;
    HostFile file;
    try {
      file = Splitter(plan, host).build();
    } catch (const TooLarge&) {
      problems.push_back(Problem{plan.file, host.pos.line, host.pos.column, host.path,
                                 fmt::format("host {}: its run file would be deeper than {} "
                                             "levels or have more than {} nodes; do aliases "
                                             "(*name) repeat large parts of the plan?",
                                             host.name, kMaxDepth, max_nodes(plan))});
      continue;
    }
    out.run_file = file.text;
    ++checked;
    found.check(plan, k, file);
  }
  found.append_to(problems, plan, checked);
}

}  // namespace rocecap::fleet::plan_detail
