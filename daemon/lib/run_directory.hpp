// The run directory (output.directory / run.name) held open for the whole run, and the storage
// loss it reveals.
//
// Containment. The run directory is created 0750 (writers::kOutputDirMode) and opened with
// O_NOFOLLOW: a run directory that is a symlink, or that resolves outside output.directory, is
// refused before anything is written (exit 3), so neither the data files nor manifest.json can
// land outside the output directory.
//
// Storage loss. check() compares the directory open since the start with what its path names
// now: removed (st_nlink 0 on the open directory, or the path gone) or replaced (another
// st_dev/st_ino at the path) means the run can no longer be recorded where it was asked.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <filesystem>
#include <string>

namespace rocecap::daemon {

class RunDirectory {
 public:
  // Creates and opens `run_dir`, which must resolve inside `output_dir`. Throws
  // std::runtime_error naming the path and the reason.
  RunDirectory(const std::filesystem::path& output_dir, const std::filesystem::path& run_dir);
  ~RunDirectory();
  RunDirectory(const RunDirectory&) = delete;
  RunDirectory& operator=(const RunDirectory&) = delete;

  const std::filesystem::path& path() const noexcept { return path_; }
  // Empty while the directory is still the one opened at the start; else what happened to it.
  std::string check() const;

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
};

// Set once, by whichever thread first sees the storage go (the writer thread on EIO or an
// unlinked file, the main thread on a vanished run directory); read by the main thread, which
// then stops the run and exits with kExitStorageLost.
class StorageLoss {
 public:
  // Keeps the first reason; thread-safe.
  void report(const std::string& why) noexcept;
  bool lost() const noexcept { return lost_.load(std::memory_order_acquire); }
  // Valid once lost() is true.
  const std::string& why() const noexcept { return why_; }

 private:
  std::atomic<bool> claimed_{false};
  std::atomic<bool> lost_{false};
  std::string why_;
};

}  // namespace rocecap::daemon
