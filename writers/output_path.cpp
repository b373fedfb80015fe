#include "writers/output_path.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>

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

// Opens (creating it first when missing) directory `name` below the directory `at`.
Status open_subdirectory(int at, const std::string& name, const std::filesystem::path& where,
                         UniqueFd& out) {
  if (::mkdirat(at, name.c_str(), kOutputDirMode) != 0 && errno != EEXIST) {
    return sys_error(errno, "create directory", where);
  }
  const int fd = ::openat(at, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    out.reset(fd);
    return {};
  }
  const int err = errno;
  if (err != ELOOP && err != ENOTDIR) return sys_error(err, "open directory", where);
  return Status::error(err,
                       "open directory " + where.string() +
                           ": a symlink or not a directory (refused: every file of a run stays "
                           "inside its output directory)",
                       where);
}

}  // namespace

Status make_directories(const std::filesystem::path& dir) {
  std::error_code ec;
  if (dir.empty() || std::filesystem::is_directory(dir, ec)) return {};
  if (dir.has_parent_path() && dir.parent_path() != dir) {
    if (Status s = make_directories(dir.parent_path()); !s) return s;
  }
  if (::mkdir(dir.c_str(), kOutputDirMode) != 0 && errno != EEXIST) {
    return sys_error(errno, "create directory", dir);
  }
  if (!std::filesystem::is_directory(dir, ec)) {
    return Status::error(ENOTDIR, "create directory " + dir.string() + ": not a directory", dir);
  }
  return {};
}

bool resolves_inside(const std::filesystem::path& path, const std::filesystem::path& root,
                     std::string& why) {
  std::error_code ec;
  const auto real_root = std::filesystem::canonical(root, ec);
  if (ec) {
    why = "cannot resolve " + root.string() + ": " + ec.message();
    return false;
  }
  const auto real = std::filesystem::canonical(path, ec);
  if (ec) {
    why = "cannot resolve " + path.string() + ": " + ec.message();
    return false;
  }
  if (inside(real, real_root)) return true;
  why = fmt::format("{} resolves to {}, outside the output directory {}", path.string(),
                    real.string(), real_root.string());
  return false;
}

Status place_in_directory(const std::filesystem::path& out_dir, const std::string& relative,
                          std::filesystem::path& out) {
  if (const std::string why = component_problem(relative); !why.empty()) {
    return Status::error(EINVAL, fmt::format("output file name \"{}\" {}", relative, why),
                         out_dir / relative);
  }
  const std::filesystem::path path = out_dir / relative;
  if (Status s = make_directories(path.parent_path()); !s) return s;
  std::error_code ec;
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

Status open_parent_at(int root, const std::filesystem::path& root_path, const std::string& relative,
                      UniqueFd& dir, std::string& leaf) {
  if (const std::string why = component_problem(relative); !why.empty()) {
    return Status::error(EINVAL, fmt::format("output file name \"{}\" {}", relative, why),
                         root_path / relative);
  }
  const std::size_t last = relative.rfind('/');
  leaf = last == std::string::npos ? relative : relative.substr(last + 1);
  UniqueFd cur(::fcntl(root, F_DUPFD_CLOEXEC, 0));
  if (cur.get() < 0) return sys_error(errno, "open directory", root_path);
  std::filesystem::path where = root_path;
  for (std::size_t start = 0; last != std::string::npos && start <= last;) {
    const std::size_t end = relative.find('/', start);
    const std::string name = relative.substr(start, end - start);
    where /= name;
    UniqueFd next;
    if (Status s = open_subdirectory(cur.get(), name, where, next); !s) return s;
    cur = std::move(next);
    start = end + 1;
  }
  dir = std::move(cur);
  return {};
}

}  // namespace rocecap::writers
