#include "daemon/lib/reporting/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "rundir/atomic_write.hpp"

namespace rocecap::daemon {
namespace {

std::string error(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

// One implementation of the path form, shared with `rocecap recover` (rundir/ sits below the
// daemon so that the tool does not link it).
std::string replace_file_atomically(const std::string& path, std::string_view content) {
  return rundir::write_file_atomically(path, content);
}

std::string replace_file_atomically_at(int dirfd, const std::string& name, std::string_view content,
                                       const std::string& shown, unsigned mode, bool durable) {
  const std::string tmp = name + ".tmp";
  const std::string shown_tmp = shown + ".tmp";
  // O_NOFOLLOW: a symlink planted as the temporary name is not followed out of the directory.
  const int fd =
      ::openat(dirfd, tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) return error("cannot create", shown_tmp);
  if (!write_all(fd, content) || (durable && ::fsync(fd) != 0)) {
    std::string msg = error("cannot write", shown_tmp);
    ::close(fd);
    ::unlinkat(dirfd, tmp.c_str(), 0);
    return msg;
  }
  ::close(fd);
  if (::renameat(dirfd, tmp.c_str(), dirfd, name.c_str()) != 0) {
    std::string msg = error("cannot rename over", shown);
    ::unlinkat(dirfd, tmp.c_str(), 0);
    return msg;
  }
  if (durable && ::fsync(dirfd) != 0) return error("cannot fsync the directory of", shown);
  return {};
}

}  // namespace rocecap::daemon
