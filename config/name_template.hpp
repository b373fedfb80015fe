// Output file names: templates relative to output.directory, e.g.
// "{run}/{group}_{port}_{antenna}.{seq:04}.{ext}".
//
// Placeholders: {run} {interface} {group} (dotted address) {port} {antenna} {thread} (VDIF) {ext}
// {seq} and {seq:0N} (zero-padded to N digits, N = 1..9). Per-interface pcap
// templates may not use {group}, {port}, {antenna} or {thread}. A template must contain {seq}
// (rotation) and can never leave the directory: no absolute path, no "." / ".." / empty components.
// The values substituted are restricted by the schema to [A-Za-z0-9._:-] and never start with '.'.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "config/run_config.hpp"

namespace rocecap::config {

enum class TemplateScope : uint8_t { stream, interface };

// Position of the first control character (below 0x20, or 0x7F) in text, or npos.
std::size_t find_control(std::string_view text) noexcept;
// text with each control character written as \xNN, fit for a message.
std::string printable(std::string_view text);

// Empty when the template is fine; else what is wrong, fit to follow "key.path: ".
std::string check_name_template(std::string_view name_template, TemplateScope scope);

struct NameFields {
  std::string_view run;
  std::string_view interface;
  std::string_view group;
  uint16_t port = 0;
  std::string_view antenna;
  std::string_view ext;
  uint64_t seq = 0;
  std::string_view thread = {};  // VDIF thread id ("all" when streams.threads is empty)
};

// Substitutes the placeholders of a template that passed check_name_template.
std::string expand_name(std::string_view name_template, const NameFields& fields);

// "codif" / "vdif" (raw frames), "dat" (raw, headers stripped or format udp), "chead", "vhead",
// "pcap".
std::string_view file_extension(const RunConfig& config, OutputFormat format) noexcept;

// Relative path of the seq-th file of one stream in a per-stream format (raw, codifhdr).
std::string stream_file_name(const RunConfig& config, const StreamRef& stream, OutputFormat format,
                             uint64_t seq);
// Relative path of the seq-th pcap file of one interface.
std::string pcap_file_name(const RunConfig& config, std::size_t interface, uint64_t seq);

}  // namespace rocecap::config
