// Replacing a file so that a reader (or a crash) only ever sees the old or the new whole file:
// write a temporary file beside it, fsync it, rename it over the target, fsync the directory.
#pragma once

#include <string>
#include <string_view>

namespace rocecap {

// Returns an empty string on success, else a message naming the path and the error.
std::string replace_file_atomically(const std::string& path, std::string_view content);

}  // namespace rocecap
