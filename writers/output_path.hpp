// Where an output file may go: a relative name (expanded from the run file's templates by
// config/name_template.hpp) placed under the output directory, never outside it.
#pragma once

#include <filesystem>
#include <string>

#include "writers/status.hpp"
#include "writers/unique_fd.hpp"

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

// The directory file `relative` goes in, below the directory open as `root` (`root_path` only
// names it in messages): each component opened with openat(O_NOFOLLOW) from the one before,
// created where missing (kOutputDirMode); `leaf` is the file's name in `dir`. Nothing is
// reached through a symlink, and no path is looked up from the top again: a target whose
// path now names another directory (unmounted, mounted over, its run directory replaced) is
// never written through that path (issue 23). Refused (EINVAL) as place_in_directory; ELOOP
// or ENOTDIR for a component that is a symlink or not a directory.
Status open_parent_at(int root, const std::filesystem::path& root_path, const std::string& relative,
                      UniqueFd& dir, std::string& leaf);

}  // namespace rocecap::writers
