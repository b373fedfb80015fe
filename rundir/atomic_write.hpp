// Replacing a small file (the manifest) so that a reader or a crash sees the old or the new
// whole file: temporary file beside it, fsync, rename, fsync of the directory. The same steps as
// daemon/lib/reporting/atomic_file.hpp, here so that `rocecap recover` does not link the daemon.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace rocecap::rundir {

// Empty on success, else a message naming the path and the error. New files get mode 0640.
std::string write_file_atomically(const std::filesystem::path& path, std::string_view content);

}  // namespace rocecap::rundir
