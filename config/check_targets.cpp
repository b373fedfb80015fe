// output.directories: no target listed twice under two spellings, none inside another. Pass 2
// compares the paths as written, normalised (`/o/x/../b` is `/o/b`); pass 3, on the host,
// compares what they resolve to (a symlink to another target is that target), so two targets
// never write into one directory with each believing it has all of its free space.
#include <fmt/format.h>

#include <filesystem>

#include "config/schema.hpp"

namespace rocecap::config {
namespace {

namespace fs = std::filesystem;

std::string without_trailing_slash(std::string p) {
  while (p.size() > 1 && p.back() == '/')
    p.pop_back();
  return p;
}

// The directory a target names: the real path of its nearest existing ancestor with the rest
// as written (fs::weakly_canonical), or, without looking at the host, the path normalised.
std::string identity(const std::string& dir, bool resolve) {
  if (resolve) {
    std::error_code ec;
    const fs::path real = fs::weakly_canonical(dir, ec);
    if (!ec) return without_trailing_slash(real.lexically_normal().string());
  }
  return without_trailing_slash(fs::path(dir).lexically_normal().string());
}

// `inner` is below `outer` (both normalised, without trailing slash).
bool inside(const std::string& inner, const std::string& outer) {
  const std::string prefix = outer == "/" ? outer : outer + "/";
  return inner.size() > prefix.size() && inner.compare(0, prefix.size(), prefix) == 0;
}

std::string target_path(std::size_t i) {
  return fmt::format("output.directories[{}]", i);
}

// Reports entry i against the others: the first entry it repeats, or one it is inside.
void check_one(Context& ctx, const OutputSection& o, const std::vector<std::string>& ids,
               std::size_t i) {
  const std::string& d = o.directories[i];
  for (std::size_t j = 0; j < i; ++j) {
    if (ids[j] != ids[i]) continue;
    ctx.report(target_path(i),
               fmt::format("'{}' is the same directory as output.directories[{}] '{}' (both are "
                           "{}); list each target once",
                           d, j, o.directories[j], ids[i]));
    return;
  }
  for (std::size_t j = 0; j < ids.size(); ++j) {
    if (j == i || ids[j].empty() || ids[j] == ids[i] || !inside(ids[i], ids[j])) continue;
    ctx.report(target_path(i), fmt::format("'{}' is inside output.directories[{}] '{}'; targets "
                                           "must not nest",
                                           d, j, o.directories[j]));
    return;
  }
}

}  // namespace

void check_target_identity(Context& ctx, const OutputSection& o, bool resolve) {
  std::vector<std::string> ids;
  for (std::size_t i = 0; i < o.directories.size(); ++i) {
    const std::string& d = o.directories[i];
    const bool usable = !ctx.failed(target_path(i)) && !d.empty() && d.front() == '/';
    ids.push_back(usable ? identity(d, resolve) : std::string());
  }
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (!ids[i].empty()) check_one(ctx, o, ids, i);
  }
}

}  // namespace rocecap::config
