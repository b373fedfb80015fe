// One process per run directory. Two rocecapd on the same run would both open the same file
// names (one of them writing nothing) and overwrite each other's manifest; `rocecap recover`
// trimming files under a running daemon would cut frames it is still writing.
//
// The lock is flock(2) LOCK_EX on `.rocecapd.lock` inside the run directory, held by an open
// file descriptor for the life of the RunDirLock (the kernel drops it when the process dies,
// SIGKILL included, so a crash never leaves a stale lock). The holder writes its PID into the
// file so that the refused process can name it. The file is never unlinked: unlinking a lock
// file races with a process that has it open and is about to lock it (two holders of two
// different inodes).
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
  // Creates the lock file (mode 0640) and takes the lock without waiting. Throws RunDirInUse
  // naming the holder's PID when another process holds it, std::runtime_error on other errors.
  // `who` ("rocecapd", "rocecap recover") is written after the PID.
  RunDirLock(const std::filesystem::path& run_dir, const std::string& who);
  ~RunDirLock();
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;

  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

}  // namespace rocecap::rundir
