// One process per run directory. Two rocecapd on the same run would both open the same file
// names (one of them writing nothing) and overwrite each other's manifest; `rocecap recover`
// trimming files under a running daemon would cut frames it is still writing.
//
// The lock is flock(2) LOCK_EX on the run directory itself (an O_DIRECTORY descriptor), held
// for the life of the RunDirLock; the kernel drops it when the process dies, SIGKILL included,
// so a crash never leaves a stale lock. A lock on a file inside the directory could be lifted
// by anyone who can unlink that path: the next process would create a new file, lock that inode
// and "recover" a live run (removing the files it is writing). The directory's inode cannot be
// swapped under its name without the holder's storage check seeing it (a run directory
// replaced is storage lost, daemon/lib/run/run_directory.hpp).
//
// `.rocecapd.lock` inside the directory holds the holder's PID for the refused process's
// message, and is flock'ed too, so that a holder that locks only the file (an older rocecapd)
// still refuses a newer one. The refused process names the holder as the kernel knows it
// (/proc/locks, by the directory's device and inode), whatever the file says now; the file only
// where /proc/locks does not show it. The file is never unlinked by its holder: unlinking a lock
// file races with a process that has it open and is about to lock it. NFS cannot flock a
// directory (its emulation needs a descriptor open for writing): there the file's lock is the
// only one, as it was before, and warning() says so.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>

namespace rocecap::rundir {

inline constexpr const char* kLockFileName = ".rocecapd.lock";

// Another process holds the run directory's lock (the message names its PID): a caller can
// tell this from other start-up failures (rocecapd exits 6 for it, which systemd does not
// retry every few seconds).
class RunDirInUse : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class RunDirLock {
 public:
  // Locks the run directory without waiting, then writes this PID into `.rocecapd.lock`
  // (created 0640) and locks that too. Throws RunDirInUse naming the holder's PID when another
  // process holds the directory (or the file), std::runtime_error when the directory cannot be
  // opened or locked. A lock file that cannot be written (not a regular file) does not stop the
  // lock: the directory's is the one that counts; warning() says the PID is missing. Where the
  // file system cannot lock a directory (NFS), the file's lock is the lock (as before), and
  // warning() says so. `who` ("rocecapd", "rocecap recover") is written after the PID.
  RunDirLock(const std::filesystem::path& run_dir, const std::string& who);
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;

  const std::filesystem::path& path() const noexcept { return path_; }
  // Empty, or what the lock lacks (no PID written, or only the file locked): for a warning.
  const std::string& warning() const noexcept { return warning_; }

 private:
  void lock_pid_file(const std::filesystem::path& run_dir, const std::string& who, bool dir_locked);

  // Closed (the lock released) with the RunDirLock, or when its constructor throws.
  struct Fd {
    int fd = -1;
    Fd() = default;
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd();
  };

  std::filesystem::path path_;  // the PID file
  Fd dir_;                      // the run directory: its flock is the lock
  Fd file_;                     // the PID file (flock'ed too)
  std::string warning_;
};

}  // namespace rocecap::rundir
