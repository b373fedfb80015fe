#include "config/yaml_walk.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "config/name_template.hpp"
#include "config/units.hpp"

namespace rocecap::config {

Pos to_pos(const YAML::Mark& mark) {
  if (mark.line < 0) return Pos{};
  return Pos{mark.line + 1, mark.column + 1};
}

void Context::report(Pos pos, std::string path, std::string message) {
  problem_paths_.insert(path);
  problems_.push_back(Problem{file_, pos.line, pos.column, std::move(path), std::move(message)});
}

void Context::report(std::string_view path, std::string message) {
  report(position_of(path), std::string(path), std::move(message));
}

Pos Context::position_of(std::string_view path) const {
  std::string_view p = path;
  while (true) {
    const auto it = positions_.find(p);
    if (it != positions_.end()) return it->second;
    const std::size_t cut = p.find_last_of(".[");
    if (cut == std::string_view::npos) return Pos{};
    p = p.substr(0, cut);
  }
}

bool Context::failed(std::string_view path) const {
  if (problem_paths_.find(path) != problem_paths_.end()) return true;
  // Below it: the smallest path starting with "path." or "path[" starts with it.
  for (const char sep : {'.', '['}) {
    std::string prefix(path);
    prefix += sep;
    const auto it = problem_paths_.lower_bound(prefix);
    if (it != problem_paths_.end() && std::string_view(*it).substr(0, prefix.size()) == prefix)
      return true;
  }
  return false;
}

std::string child_path(std::string_view parent, std::string_view key) {
  if (parent.empty()) return std::string(key);
  return fmt::format("{}.{}", parent, key);
}

namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string joined(std::span<const std::string_view> names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ", ";
    out += names[i];
  }
  return out;
}

std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Null:
      return "nothing";
    default:
      return fmt::format("'{}'", node.Scalar());
  }
}

}  // namespace

std::string_view nearest(std::string_view word, std::span<const std::string_view> candidates) {
  std::string_view best;
  // Up to 2 edits, more for long words ("rotation" -> "rotate" is 3).
  std::size_t best_distance = std::max<std::size_t>(2, (word.size() + 1) / 3) + 1;
  for (std::string_view c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

MapView::MapView(Context& ctx, const Field& field, std::span<const std::string_view> names)
    : ctx_(ctx), self_(field) {
  if (!field.node.IsMap()) {
    ctx.report(field.pos, field.path,
               fmt::format("expected a map of keys, found {}", describe(field.node)));
    return;
  }
  valid_ = true;
  for (auto it = field.node.begin(); it != field.node.end(); ++it) {
    const Pos key_pos = to_pos(it->first.Mark());
    if (!it->first.IsScalar()) {
      ctx.report(key_pos, field.path, "keys must be plain words");
      continue;
    }
    const std::string key = it->first.Scalar();
    const std::string path = child_path(field.path, key);
    if (std::find(names.begin(), names.end(), key) == names.end()) {
      const std::string_view guess = nearest(key, names);
      ctx.report(key_pos, path,
                 guess.empty()
                     ? fmt::format("unknown key '{}' (known here: {})", key, joined(names))
                     : fmt::format("unknown key '{}'; did you mean '{}'?", key, guess));
      continue;
    }
    const auto seen = std::find_if(entries_.begin(), entries_.end(),
                                   [&](const Entry& e) { return e.key == key; });
    if (seen != entries_.end()) {
      ctx.report(key_pos, path,
                 fmt::format("duplicate key '{}' (first at line {})", key, seen->key_pos.line));
      continue;
    }
    const Pos value_pos = it->second.IsNull() ? key_pos : to_pos(it->second.Mark());
    ctx.remember(path, value_pos);
    entries_.push_back(Entry{key, key_pos, Field{it->second, path, value_pos}});
  }
}

std::optional<Field> MapView::get(std::string_view key) const {
  for (const Entry& e : entries_) {
    if (e.key == key) return e.value;
  }
  return std::nullopt;
}

std::optional<Field> MapView::require(std::string_view key, std::string_view hint) const {
  auto found = get(key);
  if (!found && valid_) {
    ctx_.report(self_.pos, child_path(self_.path, key),
                hint.empty() ? std::string("missing (required)")
                             : fmt::format("missing (required); {}", hint));
  }
  return found;
}

std::optional<std::string> read_string(Context& ctx, const std::optional<Field>& f) {
  if (!f) return std::nullopt;
  if (f->node.IsNull()) {
    ctx.report(f->pos, f->path, "missing value");
    return std::nullopt;
  }
  if (!f->node.IsScalar()) {
    ctx.report(f->pos, f->path,
               fmt::format("expected a single value, found {}", describe(f->node)));
    return std::nullopt;
  }
  // No value of a run file (names, paths, templates, numbers) has a use for a control
  // character; a NUL in a name template made two streams share a file.
  const std::string& text = f->node.Scalar();
  if (const std::size_t at = find_control(text); at != std::string::npos) {
    ctx.report(f->pos, f->path,
               fmt::format("'{}' contains control character 0x{:02X} at character {}; values "
                           "take printable characters only",
                           printable(text), static_cast<unsigned char>(text[at]), at + 1));
    return std::nullopt;
  }
  return text;
}

namespace {

template <typename Parse>
std::optional<uint64_t> read_ranged(Context& ctx, const std::optional<Field>& f, uint64_t min,
                                    uint64_t max, Parse parse, bool as_size) {
  const auto text = read_string(ctx, f);
  if (!text) return std::nullopt;
  std::string error;
  const std::optional<uint64_t> value = parse(*text, error);
  if (!value) {
    ctx.report(f->pos, f->path, error);
    return std::nullopt;
  }
  auto show = [&](uint64_t v) { return as_size ? format_size(v) : std::to_string(v); };
  if (*value < min) {
    ctx.report(f->pos, f->path, fmt::format("{} is too small (at least {})", *text, show(min)));
    return std::nullopt;
  }
  if (*value > max) {
    ctx.report(f->pos, f->path, fmt::format("{} is too large (at most {})", *text, show(max)));
    return std::nullopt;
  }
  return value;
}

}  // namespace

std::optional<uint64_t> read_uint(Context& ctx, const std::optional<Field>& f, uint64_t min,
                                  uint64_t max) {
  return read_ranged(
      ctx, f, min, max,
      [](std::string_view t, std::string& e) { return parse_uint(t, UINT64_MAX, e); }, false);
}

std::optional<uint64_t> read_size(Context& ctx, const std::optional<Field>& f, uint64_t min,
                                  uint64_t max) {
  return read_ranged(
      ctx, f, min, max, [](std::string_view t, std::string& e) { return parse_size(t, e); }, true);
}

std::optional<bool> read_bool(Context& ctx, const std::optional<Field>& f) {
  const auto text = read_string(ctx, f);
  if (!text) return std::nullopt;
  if (*text == "true") return true;
  if (*text == "false") return false;
  ctx.report(f->pos, f->path, fmt::format("'{}' is not true or false", *text));
  return std::nullopt;
}

std::optional<uint32_t> read_ipv4(Context& ctx, const std::optional<Field>& f) {
  const auto text = read_string(ctx, f);
  if (!text) return std::nullopt;
  std::string error;
  const auto value = parse_ipv4(*text, error);
  if (!value) ctx.report(f->pos, f->path, error);
  return value;
}

std::optional<std::size_t> read_choice(Context& ctx, const std::optional<Field>& f,
                                       std::span<const std::string_view> names) {
  const auto text = read_string(ctx, f);
  if (!text) return std::nullopt;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (*text == names[i]) return i;
  }
  const std::string_view guess = nearest(*text, names);
  ctx.report(f->pos, f->path,
             guess.empty() ? fmt::format("'{}' is not one of {}", *text, joined(names))
                           : fmt::format("'{}' is not one of {}; did you mean '{}'?", *text,
                                         joined(names), guess));
  return std::nullopt;
}

std::vector<Field> list_items(Context& ctx, const std::optional<Field>& f) {
  std::vector<Field> items;
  if (!f) return items;
  if (!f->node.IsSequence()) {
    ctx.report(f->pos, f->path, fmt::format("expected a list, found {}", describe(f->node)));
    return items;
  }
  std::size_t i = 0;
  for (const YAML::Node& item : f->node) {
    const std::string path = fmt::format("{}[{}]", f->path, i++);
    const Pos pos = item.IsNull() ? f->pos : to_pos(item.Mark());
    ctx.remember(path, pos);
    items.push_back(Field{item, path, pos});
  }
  return items;
}

}  // namespace rocecap::config
