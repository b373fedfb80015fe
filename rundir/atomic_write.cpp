#include "rundir/atomic_write.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace rocecap::rundir {
namespace {

std::string failure(const char* what, const std::filesystem::path& p) {
  return std::string(what) + " " + p.string() + ": " + std::strerror(errno);
}

}  // namespace

std::string write_file_atomically(const std::filesystem::path& path, std::string_view content) {
  const std::filesystem::path tmp = path.string() + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640);
  if (fd < 0) return failure("cannot create", tmp);
  while (!content.empty()) {
    const ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string msg = failure("cannot write", tmp);
      ::close(fd);
      ::unlink(tmp.c_str());
      return msg;
    }
    content.remove_prefix(static_cast<std::size_t>(n));
  }
  if (::fsync(fd) != 0) {
    std::string msg = failure("cannot fsync", tmp);
    ::close(fd);
    ::unlink(tmp.c_str());
    return msg;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string msg = failure("cannot rename over", path);
    ::unlink(tmp.c_str());
    return msg;
  }
  const int dfd = ::open(path.parent_path().empty() ? "." : path.parent_path().c_str(),
                         O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return {};
}

}  // namespace rocecap::rundir
