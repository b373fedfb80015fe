#include "fleet/plan/plan.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/depthguard.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <tuple>
#include <unordered_map>

#include "config/loader.hpp"
#include "config/schema_keys.hpp"
#include "config/units.hpp"
#include "fleet/plan/plan_parts.hpp"

namespace rocecap::fleet {

namespace plan_detail {

std::optional<KeyValue> find_key(const YAML::Node& map, std::string_view key) {
  if (!map.IsMap()) return std::nullopt;
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (it->first.IsScalar() && it->first.Scalar() == key) return KeyValue{it->first, it->second};
  }
  return std::nullopt;
}

}  // namespace plan_detail

namespace {

using config::Context;
using config::Field;
using config::MapView;
using config::Pos;
using config::to_pos;
using plan_detail::AntennaList;
using plan_detail::find_key;
using plan_detail::GroupUse;
using plan_detail::HostEntry;
using plan_detail::PlanInput;

constexpr std::string_view kFleetKeys[] = {"name", "redundant"};
constexpr std::string_view kHostKeys[] = {"name", "interfaces", "antennas", "output", "metrics"};
constexpr std::size_t kMaxNameLength = 64;

// Fleet and host names become etcd key segments, file names and the agent's --host: starting
// with a letter or digit keeps out "." and ".." and anything an option parser would take.
bool valid_name(std::string_view s) {
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  if (s.empty() || s.size() > kMaxNameLength || !alnum(s.front())) return false;
  return std::all_of(s.begin(), s.end(),
                     [&](char c) { return alnum(c) || c == '.' || c == '_' || c == '-'; });
}

std::optional<std::string> read_name(Context& ctx, const std::optional<Field>& f) {
  auto text = config::read_string(ctx, f);
  if (text && !valid_name(*text)) {
    ctx.report(f->pos, f->path,
               fmt::format("'{}' is not a valid name: 1 to {} characters from A-Z a-z 0-9 . _ -, "
                           "starting with a letter or digit",
                           *text, kMaxNameLength));
    return std::nullopt;
  }
  return text;
}

// yaml-cpp gives odd messages for control bytes (a NUL reads as an unknown escape): the first
// one is reported by position instead, as the run-file loader does.
bool printable_text(std::string_view text, Context& ctx) {
  Pos pos;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F) {
      ctx.report(pos, "", fmt::format("control character 0x{:02X}; a plan is text", c));
      return false;
    }
    pos = c == '\n' ? Pos{pos.line + 1, 1} : Pos{pos.line, pos.column + 1};
  }
  return true;
}

std::optional<YAML::Node> parse_yaml(std::string_view text, Context& ctx) {
  if (!printable_text(text, ctx)) return std::nullopt;
  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(std::string(text));
  } catch (const YAML::DeepRecursion& e) {  // its message is only "bad file"
    ctx.report(to_pos(e.mark), "",
               "not valid YAML: nested too deep here; a plan needs a few levels");
    return std::nullopt;
  } catch (const YAML::Exception& e) {
    ctx.report(to_pos(e.mark), "", fmt::format("not valid YAML: {}", e.msg));
    return std::nullopt;
  }
  if (documents.empty() || documents[0].IsNull()) {
    ctx.report(Pos{}, "",
               "the file is empty; a plan needs fleet, hosts, run, capture, streams "
               "and output");
    return std::nullopt;
  }
  if (documents.size() > 1) {
    ctx.report(to_pos(documents[1].Mark()), "", "more than one YAML document (---); use one");
  }
  if (!documents[0].IsMap()) {
    ctx.report(to_pos(documents[0].Mark()), "", "expected a map of keys (fleet, hosts, run, ...)");
    return std::nullopt;
  }
  return documents[0];
}

struct Sections {
  std::optional<Field> fleet;
  std::optional<Field> hosts;
  int fleet_line = 0;
  int hosts_line = 0;
};

// Unknown top-level keys are reported here, against every key a plan knows; they are left out
// of the hosts' run files.
void check_root_key(Context& ctx, const std::string& key, Pos key_pos) {
  std::vector<std::string_view> known(std::begin(config::schema::kRoot),
                                      std::end(config::schema::kRoot));
  known.insert(known.begin(), {"fleet", "hosts"});
  if (std::find(known.begin(), known.end(), key) != known.end()) return;
  const std::string_view guess = config::nearest(key, known);
  ctx.report(key_pos, key,
             guess.empty() ? fmt::format("unknown key '{}' (known here: fleet, hosts and the keys "
                                         "of a run file: run, capture, streams, ...)",
                                         key)
                           : fmt::format("unknown key '{}'; did you mean '{}'?", key, guess));
}

Sections scan_root(Context& ctx, const YAML::Node& root) {
  Sections s;
  for (auto it = root.begin(); it != root.end(); ++it) {
    const Pos key_pos = to_pos(it->first.Mark());
    if (!it->first.IsScalar()) {
      ctx.report(key_pos, "", "keys must be plain words");
      continue;
    }
    const std::string key = it->first.Scalar();
    check_root_key(ctx, key, key_pos);
    if (key != "fleet" && key != "hosts") continue;
    auto& slot = key == "fleet" ? s.fleet : s.hosts;
    int& line = key == "fleet" ? s.fleet_line : s.hosts_line;
    if (slot) {
      ctx.report(key_pos, key, fmt::format("duplicate key '{}' (first at line {})", key, line));
      continue;
    }
    slot = Field{it->second, key, it->second.IsNull() ? key_pos : to_pos(it->second.Mark())};
    line = key_pos.line;
  }
  const Pos root_pos = to_pos(root.Mark());
  if (!s.fleet) ctx.report(root_pos, "fleet", "missing (required); a map with the fleet's name");
  if (!s.hosts) ctx.report(root_pos, "hosts", "missing (required); a list of capture hosts");
  return s;
}

// Each host's interfaces come from its entry; a common list would be replaced without a word.
void check_common_capture(Context& ctx, const YAML::Node& root) {
  const auto capture = find_key(root, "capture");
  if (!capture) return;
  if (const auto interfaces = find_key(capture->value, "interfaces")) {
    ctx.report(to_pos(interfaces->key.Mark()), "capture.interfaces",
               "a plan gives each host's interfaces in its entry (hosts[].interfaces), not here");
  }
}

std::string run_name(const YAML::Node& root) {
  const auto run = find_key(root, "run");
  const auto name = run ? find_key(run->value, "name") : std::nullopt;
  return name && name->value.IsScalar() ? name->value.Scalar() : std::string();
}

AntennaList read_antennas(const YAML::Node& root) {
  AntennaList list;
  const auto streams = find_key(root, "streams");
  const auto antennas = streams ? find_key(streams->value, "antennas") : std::nullopt;
  if (!antennas || !antennas->value.IsSequence()) return list;
  for (const YAML::Node& item : antennas->value) {
    const auto name = find_key(item, "name");
    std::string text = name && name->value.IsScalar() ? name->value.Scalar() : std::string();
    const std::size_t i = list.names.size();
    if (!text.empty() && list.first.emplace(text, i).second) list.counted.push_back(i);
    list.names.push_back(std::move(text));
  }
  return list;
}

bool usable_group(uint32_t address) {
  return (address >> 28) == 0xE && (address >> 8) != 0xE00000;
}

void read_redundant(Context& ctx, const Field& item, std::vector<GroupUse>& out) {
  const auto text = config::read_string(ctx, item);
  if (!text) return;
  std::string error;
  const auto e = config::parse_endpoint(*text, error);
  if (!e) {
    ctx.report(item.pos, item.path, error + " (write group:port)");
    return;
  }
  if (!usable_group(e->address)) {
    ctx.report(item.pos, item.path,
               fmt::format("{} is not a multicast group (224.0.0.0/4 outside 224.0.0.0/24)",
                           config::format_ipv4(e->address)));
    return;
  }
  const uint64_t key = uint64_t{e->address} << 16 | e->port;
  const auto seen =
      std::find_if(out.begin(), out.end(), [&](const GroupUse& g) { return g.key == key; });
  if (seen != out.end()) {
    ctx.report(item.pos, item.path, fmt::format("listed twice (first at line {})", seen->pos.line));
    return;
  }
  out.push_back(GroupUse{key, item.path, item.pos});
}

void read_fleet(Context& ctx, const Field& f, PlanInput& in) {
  const MapView m(ctx, f, kFleetKeys);
  if (!m.valid()) return;
  if (auto v = read_name(ctx, m.require("name", "the fleet's etcd prefix /rocecap/<name>"))) {
    in.fleet_name = *v;
  }
  for (const Field& item : config::list_items(ctx, m.get("redundant")))
    read_redundant(ctx, item, in.redundant);
}

// A group as the loader would read it (address:port, or {address, port}); none when it would
// not read it: the loader reports that, in the host's run file.
std::optional<uint64_t> group_key(const YAML::Node& item) {
  std::string error;
  if (item.IsScalar()) {
    const auto e = config::parse_endpoint(item.Scalar(), error);
    if (!e) return std::nullopt;
    return uint64_t{e->address} << 16 | e->port;
  }
  const auto address = find_key(item, "address");
  const auto port = find_key(item, "port");
  if (!address || !port || !address->value.IsScalar() || !port->value.IsScalar()) {
    return std::nullopt;
  }
  const auto a = config::parse_ipv4(address->value.Scalar(), error);
  const auto p = config::parse_uint(port->value.Scalar(), 65535, error);
  if (!a || !p || *p == 0) return std::nullopt;
  return uint64_t{*a} << 16 | *p;
}

void collect_groups(const YAML::Node& interfaces, HostEntry& h) {
  if (!interfaces.IsSequence()) return;
  for (std::size_t i = 0; i < interfaces.size(); ++i) {
    const auto groups = find_key(interfaces[i], "groups");
    if (!groups || !groups->value.IsSequence()) continue;
    for (std::size_t j = 0; j < groups->value.size(); ++j) {
      const YAML::Node item = groups->value[j];
      const auto key = group_key(item);
      if (!key || std::any_of(h.groups.begin(), h.groups.end(),
                              [&](const GroupUse& g) { return g.key == *key; })) {
        continue;
      }
      h.groups.push_back(GroupUse{*key, fmt::format("{}.interfaces[{}].groups[{}]", h.path, i, j),
                                  to_pos(item.Mark())});
    }
  }
}

void report_unknown_antenna(Context& ctx, const Field& item, const std::string& name,
                            const AntennaList& antennas) {
  std::vector<std::string_view> names;
  for (const std::size_t i : antennas.counted)
    names.push_back(antennas.names[i]);
  const std::string_view guess = config::nearest(name, names);
  ctx.report(item.pos, item.path,
             guess.empty()
                 ? fmt::format("'{}' is not the name of an antenna in streams.antennas", name)
                 : fmt::format("'{}' is not the name of an antenna in streams.antennas; did you "
                               "mean '{}'?",
                               name, guess));
}

void read_host_antennas(Context& ctx, const std::optional<Field>& f, const AntennaList& antennas,
                        HostEntry& h) {
  if (!f) return;
  const auto items = config::list_items(ctx, f);
  if (f->node.IsSequence() && items.empty()) {
    ctx.report(f->pos, f->path,
               "needs at least one antenna; leave antennas out to take all of streams.antennas");
  }
  std::vector<bool> takes(antennas.names.size(), false);
  for (const Field& item : items) {
    const auto name = config::read_string(ctx, item);
    if (!name) continue;
    const auto found = antennas.first.find(*name);
    if (found == antennas.first.end()) {
      report_unknown_antenna(ctx, item, *name, antennas);
    } else if (takes[found->second]) {
      ctx.report(item.pos, item.path, "listed twice");
    } else {
      takes[found->second] = true;
    }
  }
  h.takes = std::move(takes);
}

HostEntry read_host(Context& ctx, const Field& item, const AntennaList& antennas,
                    std::unordered_map<std::string, int>& name_lines) {
  HostEntry h;
  h.path = item.path;
  h.pos = item.pos;
  h.node.reset(item.node);  // reset binds; assigning a YAML::Node writes into the node it has
  const MapView m(ctx, item, kHostKeys);
  if (!m.valid()) return h;
  const auto name_field = m.require("name", "the host's name, as its agent's --host");
  if (const auto name = read_name(ctx, name_field)) {
    const auto [seen, fresh] = name_lines.emplace(*name, name_field->pos.line);
    if (!fresh) {
      ctx.report(name_field->pos, name_field->path,
                 fmt::format("host '{}' is already listed (line {})", *name, seen->second));
    }
    h.name = *name;
  }
  const auto interfaces = m.require("interfaces", "a list, as capture.interfaces in a run file");
  if (interfaces) collect_groups(interfaces->node, h);
  read_host_antennas(ctx, m.get("antennas"), antennas, h);
  config::read_string(ctx, m.get("output"));
  config::read_string(ctx, m.get("metrics"));
  h.splittable = !h.name.empty() && interfaces && !ctx.failed(item.path);
  return h;
}

void read_hosts(Context& ctx, const Field& f, PlanInput& in) {
  in.hosts_pos = f.pos;
  const auto items = config::list_items(ctx, f);
  if (f.node.IsSequence() && items.empty()) ctx.report(f.pos, f.path, "needs at least one host");
  std::unordered_map<std::string, int> name_lines;
  for (const Field& item : items)
    in.hosts.push_back(read_host(ctx, item, in.antennas, name_lines));
}

void load(std::string_view text, Context& ctx, PlanResult& result, const std::string& file_name) {
  const auto root = parse_yaml(text, ctx);
  if (!root) return;
  PlanInput in;
  in.file = file_name;
  in.text_size = text.size();
  in.root.reset(*root);
  const Sections sections = scan_root(ctx, in.root);
  result.plan.run = run_name(in.root);
  in.antennas = read_antennas(in.root);
  check_common_capture(ctx, in.root);
  if (sections.fleet) read_fleet(ctx, *sections.fleet, in);
  if (sections.hosts) read_hosts(ctx, *sections.hosts, in);
  result.plan.fleet = in.fleet_name;
  plan_detail::check_coverage(ctx, in);
  plan_detail::split_and_check(in, result.plan.hosts, result.problems);
}

// Owns the plan's descriptor while it is read.
struct Descriptor {
  explicit Descriptor(int descriptor) noexcept : fd(descriptor) {}
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
  const int fd;
};

// The same bounds as a run file's (config::load_file): a plan is a run file plus hosts. A FIFO
// or device is refused before anything is read (O_NONBLOCK: opening a FIFO does not wait for
// a writer), and the read stops past the bound in case the file grows meanwhile.
std::string read_plan_file(const std::string& path, std::string& text) {
  const Descriptor file(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (file.fd < 0) return fmt::format("cannot read: {}", std::strerror(errno));
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) return fmt::format("cannot read: {}", std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return "is not a regular file; give the plan's YAML file";
  const auto too_big = [](uint64_t size) {
    return fmt::format("is {} bytes; a plan may have at most {} bytes", size,
                       config::kMaxRunFileBytes);
  };
  if (static_cast<uint64_t>(st.st_size) > config::kMaxRunFileBytes) return too_big(st.st_size);
  char buffer[65536];
  while (true) {
    const ssize_t n = ::read(file.fd, buffer, sizeof buffer);
    if (n == 0) return {};
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fmt::format("cannot read: {}", std::strerror(errno));
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > config::kMaxRunFileBytes) return too_big(text.size());
  }
}

}  // namespace

PlanResult load_plan_string(std::string_view text, const std::string& file_name) {
  PlanResult result;
  Context ctx(file_name, result.problems);
  try {
    result.plan.text = std::string(text);
    load(text, ctx, result, file_name);
  } catch (const std::exception& e) {  // yaml-cpp throws from unexpected places; never leak it
    result.problems.push_back(config::Problem{
        file_name, 0, 0, "", fmt::format("internal error reading the plan: {}", e.what())});
  } catch (...) {
    result.problems.push_back(
        config::Problem{file_name, 0, 0, "", "internal error reading the plan"});
  }
  std::stable_sort(result.problems.begin(), result.problems.end(),
                   [](const config::Problem& a, const config::Problem& b) {
                     return std::tie(a.line, a.column) < std::tie(b.line, b.column);
                   });
  return result;
}

PlanResult load_plan_file(const std::string& path) {
  std::string text;
  std::string why;
  try {
    why = read_plan_file(path, text);
  } catch (const std::exception& e) {
    why = fmt::format("cannot read: {}", e.what());
  }
  if (!why.empty()) {
    PlanResult result;
    result.problems.push_back(config::Problem{path, 0, 0, "", why});
    return result;
  }
  return load_plan_string(text, path);
}

}  // namespace rocecap::fleet
