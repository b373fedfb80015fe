#include "daemon/lib/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace rocecap {
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

std::string replace_file_atomically(const std::string& path, std::string_view content) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
  if (fd < 0) return error("cannot create", tmp);
  if (!write_all(fd, content) || ::fsync(fd) != 0) {
    std::string msg = error("cannot write", tmp);
    ::close(fd);
    ::unlink(tmp.c_str());
    return msg;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string msg = error("cannot rename over", path);
    ::unlink(tmp.c_str());
    return msg;
  }
  // The rename is durable only once the directory entry is.
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const int dfd = ::open(parent.empty() ? "." : parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return {};
}

std::string replace_file_atomically_at(int dirfd, const std::string& name, std::string_view content,
                                       const std::string& shown, unsigned mode) {
  const std::string tmp = name + ".tmp";
  const std::string shown_tmp = shown + ".tmp";
  // O_NOFOLLOW: a symlink planted as the temporary name is not followed out of the directory.
  const int fd =
      ::openat(dirfd, tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) return error("cannot create", shown_tmp);
  if (!write_all(fd, content) || ::fsync(fd) != 0) {
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
  if (::fsync(dirfd) != 0) return error("cannot fsync the directory of", shown);
  return {};
}

}  // namespace rocecap
