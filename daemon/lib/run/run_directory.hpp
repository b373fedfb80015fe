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
//
// Files lost with one of several output targets (report_files_lost: its run directory removed
// or replaced, its mount changed) are storage lost too, but the run goes on on the other
// targets (stopping would lose everything after it on all of them); it ends failed, exit 5.
class StorageLoss {
 public:
  // Keeps the first reason; thread-safe.
  void report(const std::string& why) noexcept;
  bool lost() const noexcept { return lost_.load(std::memory_order_acquire); }
  // Valid once lost() is true.
  const std::string& why() const noexcept { return why_; }
  // Files already written were lost with their output target; the run goes on. Keeps the
  // first reason; thread-safe.
  void report_files_lost(const std::string& why) noexcept;
  bool files_lost() const noexcept { return files_lost_.load(std::memory_order_acquire); }
  // Valid once files_lost() is true.
  const std::string& files_why() const noexcept { return files_why_; }

 private:
  std::atomic<bool> claimed_{false};
  std::atomic<bool> lost_{false};
  std::string why_;
  std::atomic<bool> files_claimed_{false};
  std::atomic<bool> files_lost_{false};
  std::string files_why_;
};

}  // namespace rocecap::daemon
