#include "rundir/run_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace rocecap::rundir {
namespace {

// 0, or the errno of a failed flock(LOCK_EX | LOCK_NB).
int try_lock(int fd) {
  int rc;
  do {
    rc = ::flock(fd, LOCK_EX | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  return rc == 0 ? 0 : errno;
}

// The PID of the process holding a flock on (dev, ino) as /proc/locks shows it, e.g.
// "3: FLOCK  ADVISORY  WRITE 2279 fd:01:1312 0 EOF" (device as hex major:minor; waiters'
// lines, "3: -> FLOCK ...", are skipped). Empty when it is not listed (another PID namespace,
// a file system whose stat device differs from its superblock's, no /proc).
std::string kernel_holder(dev_t dev, ino_t ino) {
  std::ifstream locks("/proc/locks");
  char want[64];
  std::snprintf(want, sizeof want, "%02x:%02x:%llu", ::major(dev), ::minor(dev),
                static_cast<unsigned long long>(ino));
  for (std::string line; std::getline(locks, line);) {
    std::istringstream in(line);
    std::string id, type, mode, access, pid, where;
    if (!(in >> id >> type >> mode >> access >> pid >> where) || type == "->") continue;
    if (type == "FLOCK" && where == want) return pid;
  }
  return {};
}

// The first line of `.rocecapd.lock` ("PID who"), read without following a symlink nor waiting
// on a FIFO; empty when it is missing or not a regular file.
std::string pid_file_text(int dir_fd) {
  const int fd = ::openat(dir_fd, kLockFileName, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return {};
  struct stat st {};
  char buf[128] = {};
  const ssize_t n =
      ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? ::pread(fd, buf, sizeof buf - 1, 0) : 0;
  ::close(fd);
  std::string_view s(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
  s = s.substr(0, s.find('\n'));
  while (!s.empty() && s.back() == ' ')
    s.remove_suffix(1);
  return std::string(s);
}

// The refusal: who holds the lock on the open `fd` (the run directory, or the PID file).
RunDirInUse in_use(const std::filesystem::path& run_dir, int fd, int dir_fd,
                   const std::filesystem::path& pid_file) {
  struct stat st {};
  const std::string kernel = ::fstat(fd, &st) == 0 ? kernel_holder(st.st_dev, st.st_ino) : "";
  const std::string text = pid_file_text(dir_fd);
  const std::string file_pid = text.substr(0, text.find(' '));
  std::string holder = "PID " + text, lock = pid_file.string();
  if (kernel.empty() && text.empty()) holder = "an unknown process";
  if (!kernel.empty() && file_pid != kernel) {
    holder = "PID " + kernel;
    lock += ", deleted or replaced since it was taken: the run directory itself stays locked";
  }
  return RunDirInUse("run directory " + run_dir.string() + " is in use by " + holder + " (lock " +
                     lock + "); one process per run");
}

}  // namespace

RunDirLock::RunDirLock(const std::filesystem::path& run_dir, const std::string& who)
    : path_(run_dir / kLockFileName) {
  dir_.fd = ::open(run_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir_.fd < 0) {
    throw std::runtime_error("cannot open the run directory " + run_dir.string() +
                             " to lock it: " + std::strerror(errno));
  }
  const int err = try_lock(dir_.fd);
  if (err == EWOULDBLOCK) throw in_use(run_dir, dir_.fd, dir_.fd, path_);
  // NFS emulates flock with byte-range locks, which need a descriptor open for writing (EBADF
  // on a directory): there only the file is locked, and the log says what that costs.
  const bool dir_locked = err == 0;
  if (!dir_locked && err != EBADF && err != ENOLCK && err != EOPNOTSUPP && err != EINVAL) {
    throw std::runtime_error("cannot lock the run directory " + run_dir.string() + ": " +
                             std::strerror(err));
  }
  if (!dir_locked) {
    warning_ = "the file system of " + run_dir.string() + " cannot lock a directory (" +
               std::strerror(err) + "): only " + path_.string() +
               " is locked, and deleting it would let a second process in";
  }
  lock_pid_file(run_dir, who, dir_locked);
}

// The PID file, opened inside the directory held (never through a name swapped for a symlink)
// and locked too (an older rocecapd, or a file system that cannot lock directories, locks only
// the file). With the directory locked, a file that cannot be had only loses the PID.
void RunDirLock::lock_pid_file(const std::filesystem::path& run_dir, const std::string& who,
                               bool dir_locked) {
  file_.fd = ::openat(dir_.fd, kLockFileName,
                      O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0640);
  int err = file_.fd < 0 ? errno : 0;
  struct stat st {};
  if (file_.fd >= 0 && (::fstat(file_.fd, &st) != 0 || !S_ISREG(st.st_mode))) {
    ::close(std::exchange(file_.fd, -1));
    err = -1;
  }
  if (err == 0) err = try_lock(file_.fd);
  if (err == EWOULDBLOCK) throw in_use(run_dir, file_.fd, dir_.fd, path_);
  const std::string why = err < 0 ? std::string("not a regular file") : std::strerror(err);
  if (err != 0 && !dir_locked) {
    throw std::runtime_error("cannot lock " + path_.string() + " (" + why + ")");
  }
  if (file_.fd < 0) {
    warning_ = "cannot write the PID file " + path_.string() + " (" + why +
               "): the run directory is locked, but a refused process may not be able to name "
               "this one";
    return;
  }
  const std::string text = std::to_string(::getpid()) + " " + who + "\n";
  // The PID is informational (the lock is the flock): a failed write only loses the name.
  if (::ftruncate(file_.fd, 0) == 0) (void)!::pwrite(file_.fd, text.data(), text.size(), 0);
}

RunDirLock::Fd::~Fd() {
  if (fd >= 0) ::close(fd);  // the directory's: releases the lock
}

}  // namespace rocecap::rundir
