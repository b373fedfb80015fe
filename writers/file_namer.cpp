#include "writers/file_namer.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <system_error>

namespace rocecap::writers {
namespace {

Status bad(std::string_view tmpl, std::string_view why) {
  return Status::error(EINVAL, fmt::format("file name template \"{}\": {}", tmpl, why));
}

// Empty, "." and ".." components (and so absolute paths) are refused.
std::string component_problem(std::string_view path) {
  if (path.empty()) return "is empty";
  if (path.front() == '/') return "is absolute (starts with '/')";
  std::size_t start = 0;
  while (true) {
    const std::size_t end = path.find('/', start);
    const std::string_view c =
        path.substr(start, end == std::string_view::npos ? end : end - start);
    if (c.empty()) return "has an empty path component";
    if (c == "." || c == "..") return fmt::format("has a \"{}\" path component", c);
    if (end == std::string_view::npos) return {};
    start = end + 1;
  }
}

bool inside(const std::filesystem::path& dir, const std::filesystem::path& root) {
  auto d = dir.begin();
  for (auto r = root.begin(); r != root.end(); ++r, ++d) {
    if (r->empty()) continue;  // trailing separator of root
    if (d == dir.end() || *d != *r) return false;
  }
  return true;
}

}  // namespace

Status FileNamer::parse(std::string_view tmpl, FileNamer& out) {
  static constexpr std::pair<std::string_view, Field> kNames[] = {
      {"run", Field::run},         {"interface", Field::interface},
      {"group", Field::group},     {"port", Field::port},
      {"antenna", Field::antenna}, {"source", Field::source},
      {"format", Field::format},   {"seq", Field::seq}};
  FileNamer n;
  n.pattern_ = std::string(tmpl);
  std::string literal_skeleton;  // template with placeholders replaced by "x", for path checks
  std::size_t i = 0;
  while (i < tmpl.size()) {
    const std::size_t open = tmpl.find_first_of("{}", i);
    const std::size_t lit_end = open == std::string_view::npos ? tmpl.size() : open;
    if (lit_end > i) {
      n.tokens_.push_back({Field::literal, std::string(tmpl.substr(i, lit_end - i)), 0});
      literal_skeleton += tmpl.substr(i, lit_end - i);
    }
    if (open == std::string_view::npos) break;
    if (tmpl[open] == '}') return bad(tmpl, fmt::format("unmatched '}}' at offset {}", open));
    const std::size_t close = tmpl.find('}', open);
    if (close == std::string_view::npos) {
      return bad(tmpl, fmt::format("unterminated '{{' at offset {}", open));
    }
    std::string_view inner = tmpl.substr(open + 1, close - open - 1);
    Token t;
    const std::size_t colon = inner.find(':');
    const std::string_view name = inner.substr(0, colon);
    bool known = false;
    for (const auto& [text, field] : kNames) {
      if (name == text) t.field = field, known = true;
    }
    if (!known) return bad(tmpl, fmt::format("unknown placeholder {{{}}}", inner));
    if (colon != std::string_view::npos) {
      const std::string_view width = inner.substr(colon + 1);
      const bool digits = !width.empty() && width.size() <= 2 &&
                          width.find_first_not_of("0123456789") == std::string_view::npos;
      if (t.field != Field::seq || !digits || std::stoul(std::string(width)) > 20) {
        return bad(tmpl, fmt::format("bad placeholder {{{}}} (only {{seq:NN}}, NN <= 20)", inner));
      }
      t.width = static_cast<unsigned>(std::stoul(std::string(width)));
    }
    n.has_seq_ = n.has_seq_ || t.field == Field::seq;
    n.tokens_.push_back(std::move(t));
    literal_skeleton += 'x';
    i = close + 1;
  }
  if (std::string why = component_problem(literal_skeleton); !why.empty()) return bad(tmpl, why);
  if (literal_skeleton.find('\0') != std::string::npos) return bad(tmpl, "contains a NUL byte");
  out = std::move(n);
  return {};
}

std::pair<std::string_view, std::string_view> FileNamer::field_value(Field field,
                                                                     const NameFields& f) {
  switch (field) {
    case Field::run:
      return {"run", f.run};
    case Field::interface:
      return {"interface", f.interface};
    case Field::group:
      return {"group", f.group};
    case Field::port:
      return {"port", f.port};
    case Field::antenna:
      return {"antenna", f.antenna};
    case Field::source:
      return {"source", f.source};
    case Field::format:
      return {"format", f.format};
    case Field::literal:
    case Field::seq:
      break;
  }
  return {"", ""};
}

Status FileNamer::expand(const NameFields& f, uint64_t seq, std::string& relative) const {
  relative.clear();
  for (const Token& t : tokens_) {
    if (t.field == Field::literal) {
      relative += t.text;
    } else if (t.field == Field::seq) {
      relative += fmt::format("{:0{}}", seq, t.width == 0 ? 1u : t.width);
    } else {
      const auto [label, value] = field_value(t.field, f);
      if (value.find_first_of(std::string_view("/\0", 2)) != std::string_view::npos) {
        return bad(pattern_,
                   fmt::format("value of {{{}}} (\"{}\") contains '/' or NUL", label, value));
      }
      relative += value;
    }
  }
  if (std::string why = component_problem(relative); !why.empty()) {
    return bad(pattern_, fmt::format("expands to \"{}\", which {}", relative, why));
  }
  return {};
}

Status FileNamer::make_path(const std::filesystem::path& out_dir, const NameFields& fields,
                            uint64_t seq, std::filesystem::path& out) const {
  std::string relative;
  if (Status s = expand(fields, seq, relative); !s) return s;
  return place_in_directory(out_dir, relative, out);
}

Status place_in_directory(const std::filesystem::path& out_dir, const std::string& relative,
                          std::filesystem::path& out) {
  const std::filesystem::path path = out_dir / relative;
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) return sys_error(ec.value(), "create directory", path.parent_path());
  const auto real_root = std::filesystem::canonical(out_dir, ec);
  if (ec) return sys_error(ec.value(), "resolve output directory", out_dir);
  const auto real_parent = std::filesystem::canonical(path.parent_path(), ec);
  if (ec) return sys_error(ec.value(), "resolve directory", path.parent_path());
  if (!inside(real_parent, real_root)) {
    return Status::error(EXDEV,
                         fmt::format("file {}: its directory resolves to {}, outside the "
                                     "output directory {}",
                                     path.string(), real_parent.string(), real_root.string()));
  }
  out = path;
  return {};
}

PathMaker FileNamer::path_maker(std::filesystem::path out_dir, NameFields fields) const {
  return
      [namer = *this, dir = std::move(out_dir), f = std::move(fields)](
          uint64_t seq, std::filesystem::path& out) { return namer.make_path(dir, f, seq, out); };
}

}  // namespace rocecap::writers
