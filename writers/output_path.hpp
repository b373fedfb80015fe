// Where an output file may go: a relative name (expanded from the run file's templates by
// config/name_template.hpp) placed under the output directory, never outside it.
#pragma once

#include <filesystem>
#include <string>

#include "writers/status.hpp"

namespace rocecap::writers {

// Mode of every directory the daemon creates, before the process umask: owner all, group
// read and search, nobody else (files: kOutputFileMode, 0640). Fixed rather than configured:
// a umask (systemd UMask=) can only narrow it, and the rocecap group is how analysts read runs.
inline constexpr unsigned kOutputDirMode = 0750;

// mkdir -p with kOutputDirMode (umask applied), never following a symlink as the last
// component it creates. Existing directories are left as they are.
Status make_directories(const std::filesystem::path& dir);

// Whether `path` (symlinks followed) resolves inside `root` (symlinks followed); `why` says
// where it resolves when it does not, or what failed.
bool resolves_inside(const std::filesystem::path& path, const std::filesystem::path& root,
                     std::string& why);

// out_dir / relative, with its parent directories created. Refused (EINVAL) when `relative` is
// absolute or has an empty, "." or ".." component; refused (EXDEV) when, once created, its
// directory resolves (symlinks followed) outside out_dir. Does not create the file itself.
Status place_in_directory(const std::filesystem::path& out_dir, const std::string& relative,
                          std::filesystem::path& out);

}  // namespace rocecap::writers
