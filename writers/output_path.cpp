#include "writers/output_path.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <string_view>
#include <system_error>

namespace rocecap::writers {
namespace {

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

Status place_in_directory(const std::filesystem::path& out_dir, const std::string& relative,
                          std::filesystem::path& out) {
  if (const std::string why = component_problem(relative); !why.empty()) {
    return Status::error(EINVAL, fmt::format("output file name \"{}\" {}", relative, why),
                         out_dir / relative);
  }
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
                                     path.string(), real_parent.string(), real_root.string()),
                         path);
  }
  out = path;
  return {};
}

}  // namespace rocecap::writers
