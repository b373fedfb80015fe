#include "config/name_template.hpp"

#include <fmt/format.h>

#include <array>

#include "config/units.hpp"

namespace rocecap::config {
namespace {

// One {...} placeholder parsed from a template.
struct Placeholder {
  std::string_view name;
  int width = 0;  // {seq:0N}; 0 for {seq}
};

// Parses the text between braces; false when it is not a known placeholder.
bool parse_placeholder(std::string_view body, Placeholder& out) {
  constexpr std::array<std::string_view, 8> names{"run",     "interface", "group", "port",
                                                  "antenna", "ext",       "seq",   "thread"};
  const std::size_t colon = body.find(':');
  out.name = body.substr(0, colon);
  bool known = false;
  for (std::string_view n : names)
    known = known || n == out.name;
  if (!known) return false;
  if (colon == std::string_view::npos) return true;
  std::string_view spec = body.substr(colon + 1);
  if (out.name != "seq" || spec.empty()) return false;
  if (spec.size() != 2 || spec[0] != '0') return false;
  spec.remove_prefix(1);
  if (spec.size() != 1 || spec[0] < '1' || spec[0] > '9') return false;
  out.width = spec[0] - '0';
  return true;
}

// Calls literal(text) and placeholder(p) in order; returns an error text or empty.
template <typename OnLiteral, typename OnPlaceholder>
std::string walk(std::string_view tmpl, OnLiteral literal, OnPlaceholder placeholder) {
  while (!tmpl.empty()) {
    const std::size_t open = tmpl.find_first_of("{}");
    if (open == std::string_view::npos) {
      literal(tmpl);
      break;
    }
    if (tmpl[open] == '}') return "'}' without '{'";
    literal(tmpl.substr(0, open));
    const std::size_t close = tmpl.find('}', open);
    if (close == std::string_view::npos) return "'{' without '}'";
    const std::string_view body = tmpl.substr(open + 1, close - open - 1);
    Placeholder p;
    if (!parse_placeholder(body, p)) return fmt::format("unknown placeholder '{{{}}}'", body);
    placeholder(p);
    tmpl.remove_prefix(close + 1);
  }
  return {};
}

// Checks the path shape of a template or an expanded name.
std::string check_path_shape(std::string_view path) {
  if (path.empty()) return "is empty";
  if (path.front() == '/') return "must be relative to output.directory, not an absolute path";
  if (path.back() == '/') return "must name a file, not end with '/'";
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t end = std::min(path.find('/', start), path.size());
    const std::string_view part = path.substr(start, end - start);
    if (part == "..") return "must not contain '..' (files stay inside output.directory)";
    if (part == "." || part.empty()) return "must not contain '.' or empty path components";
    start = end + 1;
  }
  return {};
}

}  // namespace

std::size_t find_control(std::string_view text) noexcept {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7F) return i;
  }
  return std::string_view::npos;
}

std::string printable(std::string_view text) {
  std::string out;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7F) {
      out += fmt::format("\\x{:02X}", c);
    } else {
      out += ch;
    }
  }
  return out;
}

std::string check_name_template(std::string_view tmpl, TemplateScope scope) {
  // A NUL ends the name at the C API: "a{antenna}\0{seq}" passed every other check and made
  // two streams write one file. Any control character in a file name is refused.
  if (const std::size_t at = find_control(tmpl); at != std::string_view::npos) {
    return fmt::format(
        "'{}' contains control character 0x{:02X} at character {}; file names "
        "take printable characters only",
        printable(tmpl), static_cast<unsigned char>(tmpl[at]), at + 1);
  }
  bool has_seq = false;
  std::string misplaced;
  const std::string syntax = walk(
      tmpl, [](std::string_view) {},
      [&](const Placeholder& p) {
        has_seq = has_seq || p.name == "seq";
        const bool per_stream =
            p.name == "group" || p.name == "port" || p.name == "antenna" || p.name == "thread";
        if (scope == TemplateScope::interface && per_stream && misplaced.empty()) {
          misplaced = p.name;
        }
      });
  if (!syntax.empty()) return fmt::format("'{}': {}", tmpl, syntax);
  if (!misplaced.empty()) {
    return fmt::format("'{}': {{{}}} is not defined for per-interface pcap files", tmpl, misplaced);
  }
  if (!has_seq) return fmt::format("'{}' has no {{seq}}; rotated files need it", tmpl);
  const std::string shape = check_path_shape(tmpl);
  if (!shape.empty()) return fmt::format("'{}' {}", tmpl, shape);
  return {};
}

std::string expand_name(std::string_view tmpl, const NameFields& f) {
  std::string out;
  walk(
      tmpl, [&](std::string_view text) { out += text; },
      [&](const Placeholder& p) {
        if (p.name == "run") out += f.run;
        if (p.name == "interface") out += f.interface;
        if (p.name == "group") out += f.group;
        if (p.name == "port") out += std::to_string(f.port);
        if (p.name == "antenna") out += f.antenna;
        if (p.name == "ext") out += f.ext;
        if (p.name == "thread") out += f.thread;
        if (p.name == "seq") {
          out += p.width > 0 ? fmt::format("{:0{}}", f.seq, p.width) : fmt::format("{}", f.seq);
        }
      });
  return out;
}

std::string_view file_extension(const RunConfig& config, OutputFormat format) noexcept {
  switch (format) {
    case OutputFormat::raw:
      if (config.output.strip_headers || config.streams.format == StreamFormat::udp) return "dat";
      return config.streams.format == StreamFormat::vdif ? "vdif" : "codif";
    case OutputFormat::vdifhdr:
      return "vhead";
    case OutputFormat::codifhdr:
      return "chead";
    case OutputFormat::pcap:
      return "pcap";
  }
  return "dat";
}

std::string stream_file_name(const RunConfig& config, const StreamRef& s, OutputFormat format,
                             uint64_t seq) {
  const InterfaceConfig& itf = config.capture.interfaces.at(s.interface);
  const GroupConfig& group = itf.groups.at(s.group);
  const std::string address = format_ipv4(group.address);
  // {thread}: the VDIF thread id, or "all" for a stream that takes every thread.
  const std::string thread = config.streams.threads.empty()
                                 ? std::string("all")
                                 : std::to_string(config.streams.threads.at(s.thread));
  NameFields fields{config.run.name,
                    itf.name,
                    address,
                    group.port,
                    config.streams.antennas.at(s.antenna).name,
                    file_extension(config, format),
                    seq};
  fields.thread = thread;
  return expand_name(config.output.name_template, fields);
}

std::string pcap_file_name(const RunConfig& config, std::size_t interface, uint64_t seq) {
  NameFields fields;
  fields.run = config.run.name;
  fields.interface = config.capture.interfaces.at(interface).name;
  fields.ext = "pcap";
  fields.seq = seq;
  return expand_name(config.output.pcap_name_template, fields);
}

}  // namespace rocecap::config
