// Output file names from a template rooted in the output directory, e.g.
// "{run}/{group}_{antenna}.{seq:04}.codif".
//
// Placeholders: {run} {interface} {group} {port} {antenna} {source} {format} {seq} and
// {seq:NN} (NN decimal digits: the sequence number zero-padded to NN digits, at most 20).
// Braces have no other use and may not appear in literal text.
//
// A name never leaves the output directory: the template must be relative with no empty, "." or
// ".." component; a value may not contain '/' or NUL; the expanded path is checked again
// component by component (a value "..", or an empty value forming a whole component, is
// refused); and once its directories exist, their real path (symlinks resolved) must still be
// inside the output directory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "writers/rotating_file.hpp"
#include "writers/status.hpp"

namespace rocecap::writers {

struct NameFields {
  std::string run;
  std::string interface;  // netdev name, e.g. "ens1f0np0"
  std::string group;      // multicast group, e.g. "239.17.0.1"
  std::string port;       // UDP destination port, e.g. "36001"
  std::string antenna;    // antenna name from the config, e.g. "ak01"
  std::string source;     // antenna source IPv4, e.g. "192.0.2.11"
  std::string format;     // "raw", "codifhdr", "pcap"
};

class FileNamer {
 public:
  // Parses and checks `tmpl`; errors name the template and the offending part.
  static Status parse(std::string_view tmpl, FileNamer& out);

  bool has_seq() const noexcept { return has_seq_; }
  const std::string& pattern() const noexcept { return pattern_; }

  // The relative name, checked; no filesystem access.
  Status expand(const NameFields& fields, uint64_t seq, std::string& relative) const;

  // out_dir / expanded name, with its parent directories created and checked to be inside
  // out_dir. Does not create the file itself.
  Status make_path(const std::filesystem::path& out_dir, const NameFields& fields, uint64_t seq,
                   std::filesystem::path& out) const;

  // make_path bound to a directory and fields, for RotatingFile.
  PathMaker path_maker(std::filesystem::path out_dir, NameFields fields) const;

 private:
  enum class Field : uint8_t { literal, run, interface, group, port, antenna, source, format, seq };
  struct Token {
    Field field = Field::literal;
    std::string text;    // literal text
    unsigned width = 0;  // {seq:NN}
  };

  static std::pair<std::string_view, std::string_view> field_value(Field field,
                                                                   const NameFields& f);

  std::string pattern_;
  std::vector<Token> tokens_;
  bool has_seq_ = false;
};

// out_dir / relative with its parent directories created, checked (symlinks resolved) to lie
// inside out_dir. For names expanded elsewhere (the run config's templates).
Status place_in_directory(const std::filesystem::path& out_dir, const std::string& relative,
                          std::filesystem::path& out);

}  // namespace rocecap::writers
