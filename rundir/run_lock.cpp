#include "rundir/run_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string_view>

namespace rocecap::rundir {
namespace {

std::string read_holder(int fd) {
  char buf[128] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string_view s(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.remove_suffix(1);
  return s.empty() ? std::string("an unknown process") : "PID " + std::string(s);
}

}  // namespace

RunDirLock::RunDirLock(const std::filesystem::path& run_dir, const std::string& who)
    : path_(run_dir / kLockFileName) {
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
  if (fd_ < 0) {
    throw std::runtime_error("cannot open lock file " + path_.string() + ": " +
                             std::strerror(errno));
  }
  int rc;
  do {
    rc = ::flock(fd_, LOCK_EX | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const int err = errno;
    const std::string holder = read_holder(fd_);
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK) {
      throw RunDirInUse("run directory " + run_dir.string() + " is in use by " + holder +
                        " (lock " + path_.string() + "); one process per run");
    }
    throw std::runtime_error("cannot lock " + path_.string() + ": " + std::strerror(err));
  }
  const std::string text = std::to_string(::getpid()) + " " + who + "\n";
  // The PID is informational (the lock is the flock): a failed write only loses the name.
  if (::ftruncate(fd_, 0) == 0) (void)!::pwrite(fd_, text.data(), text.size(), 0);
}

RunDirLock::~RunDirLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

}  // namespace rocecap::rundir
