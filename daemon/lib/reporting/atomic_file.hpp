// Replacing a file so that a reader (or a crash) only ever sees the old or the new whole file:
// write a temporary file beside it, fsync it, rename it over the target, fsync the directory.
#pragma once

#include <string>
#include <string_view>

namespace rocecap::daemon {

// Returns an empty string on success, else a message naming the path and the error.
std::string replace_file_atomically(const std::string& path, std::string_view content);

// The same inside the directory open as `dirfd` (openat/renameat): the file lands in that very
// directory even if its path was since replaced by a symlink or another directory. `name` is a
// plain file name; `shown` is the path named in messages. Created with `mode` (umask applied).
std::string replace_file_atomically_at(int dirfd, const std::string& name, std::string_view content,
                                       const std::string& shown, unsigned mode = 0640);

}  // namespace rocecap::daemon
