// Internal to the loader: walking yaml-cpp nodes while collecting Problems.
//
// yaml-cpp 0.7 keeps duplicate map keys (lookups return the first), gives missing keys no
// position and reports 0-based marks. MapView iterates each map itself to find duplicate and
// unknown keys; positions are stored 1-based per key path so that cross-field checks done
// after parsing can still point at the line that set a value.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/problem.hpp"

namespace rocecap::config {

struct Pos {
  int line = 1;  // 1-based
  int column = 1;
};

Pos to_pos(const YAML::Mark& mark);

class Context {
 public:
  Context(std::string file, std::vector<Problem>& problems)
      : file_(std::move(file)), problems_(problems), initial_problems_(problems.size()) {}

  void report(Pos pos, std::string path, std::string message);
  // At the position remembered for path, or for its nearest remembered ancestor.
  void report(std::string_view path, std::string message);
  void remember(const std::string& path, Pos pos) { positions_.emplace(path, pos); }
  Pos position_of(std::string_view path) const;
  int line_of(std::string_view path) const { return position_of(path).line; }
  // The key was written in the file (whatever its value).
  bool present(std::string_view path) const { return positions_.find(path) != positions_.end(); }
  // A problem was reported at path or below it: checks that build on it are skipped.
  bool failed(std::string_view path) const;
  bool any_problem() const { return problems_.size() > initial_problems_; }

 private:
  std::string file_;
  std::vector<Problem>& problems_;
  std::size_t initial_problems_;
  std::map<std::string, Pos, std::less<>> positions_;
  // The key paths of the problems reported through this Context: failed() looks them up in
  // O(log n) instead of scanning every problem (a run file with 200k antennas can have many).
  std::set<std::string, std::less<>> problem_paths_;
};

// A value found under a key (or a list item) with its key path and position.
struct Field {
  YAML::Node node;
  std::string path;
  Pos pos;  // the value's position; the key's when the value is empty
};

class MapView {
 public:
  // Reports when node is not a map, and every unknown or duplicate key. `known` is one of the
  // lists of config/schema_keys.hpp (it must outlive the view).
  MapView(Context& ctx, const Field& field, std::span<const std::string_view> known);

  bool valid() const { return valid_; }
  std::optional<Field> get(std::string_view key) const;
  // Reports "missing" at the map's position when absent.
  std::optional<Field> require(std::string_view key, std::string_view hint = {}) const;

 private:
  Context& ctx_;
  Field self_;
  bool valid_ = false;
  struct Entry {
    std::string key;
    Pos key_pos;
    Field value;
  };
  std::vector<Entry> entries_;  // first occurrence of each key
};

std::string child_path(std::string_view parent, std::string_view key);

// Scalar readers: absent field -> nullopt silently; bad value -> reported, nullopt.
std::optional<std::string> read_string(Context& ctx, const std::optional<Field>& f);
std::optional<uint64_t> read_uint(Context& ctx, const std::optional<Field>& f, uint64_t min,
                                  uint64_t max);
std::optional<uint64_t> read_size(Context& ctx, const std::optional<Field>& f, uint64_t min,
                                  uint64_t max);
std::optional<bool> read_bool(Context& ctx, const std::optional<Field>& f);
std::optional<uint32_t> read_ipv4(Context& ctx, const std::optional<Field>& f);

template <typename E>
struct EnumName {
  std::string_view name;
  E value;
};

std::optional<std::size_t> read_choice(Context& ctx, const std::optional<Field>& f,
                                       std::span<const std::string_view> names);

template <typename E, std::size_t N>
std::optional<E> read_enum(Context& ctx, const std::optional<Field>& f,
                           const EnumName<E> (&table)[N]) {
  std::string_view names[N];
  for (std::size_t i = 0; i < N; ++i)
    names[i] = table[i].name;
  const auto index = read_choice(ctx, f, std::span<const std::string_view>(names, N));
  if (!index) return std::nullopt;
  return table[*index].value;
}

// The items of a list (reported when f is not a list); empty when absent.
std::vector<Field> list_items(Context& ctx, const std::optional<Field>& f);

// Levenshtein-nearest of candidates within max(2, (size + 1) / 3) edits, or empty.
std::string_view nearest(std::string_view word, std::span<const std::string_view> candidates);

}  // namespace rocecap::config
