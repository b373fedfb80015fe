// The output targets of a run (output.directories): where each new file goes, which targets are
// out of rotation and why, and the per-target counters for the metrics and the manifest.
//
// Placement. A file never spans targets: each file of each stream (raw, codifhdr, pcap) is placed
// on one target when it is opened (first record, rotation, retry). The target chosen is the one
// whose share is least used: (bytes this run placed on it, the new file included) / (its free
// space when the run started, statvfs), where files closed count their size and files open the
// size they may reach (the rotation size). So bytes are balanced weighted by free space:
// targets of unequal size fill at the same time rather than the smallest first (jive5ab issue
// 30: scans lost on disks of unequal size), and targets of equal size take files in turn
// (about 1/N of the bytes each, within one file). A writer's first file reserves nothing (it may
// stay small for the whole run, as codifhdr files do next to raw ones): first files go to the
// targets with the fewest open files; a file opened by rotation reserves the rotation size.
//
// Falling behind. A target's lag is the larger of its smoothed write latency (writes completed
// since the previous placements) and the mean age of its writes still in flight (its backlog,
// writers/write_backlog.hpp: a target whose writes sit in the kernel is behind before any of them
// completes, which latency alone would show only once they do). A target whose lag is more than
// twice the reference and above slow_floor has its weight divided by lag / reference: it gets
// proportionally fewer new files while it is behind, never none. The reference is the least lag
// among the targets in rotation, or slow_floor when that is 0 (a target that has not written
// yet).
//
// Out of rotation. A target that returned ENOSPC/EDQUOT/EFBIG is "full"; EIO, EROFS, a vanished
// directory or file (ENOENT, ESTALE, ENODEV, ENXIO) or a single write slower than the stall bound
// make it "failed". Either way no new file goes there; the writer that met the error moves the
// data that did not reach the target to a new file on another one (RotatingFile). The first
// transition of a target is reported once to the observer (the daemon logs it). A full target
// comes back when statvfs shows at least `recover_bytes` free again (checked whenever a file is
// placed); a failed one stays out for the rest of the run (a device that answered EIO once is
// not trusted with more data).
//
// Identity (issue 23). Each target's directory, and the run's directory below it, are opened at
// the start and held; every file is opened below those descriptors (open_parent), never through
// the path again, so a target lazily unmounted (umount -l) or whose run directory was replaced
// never gets files on whatever its path names now (the root file system under an empty mount
// point). identity_problem() compares what the paths name now with what was opened (device,
// inode, mount id; a removed directory has no links): it runs at every file placed and on a
// timer off the writer threads (check_identity, the daemon's main thread). A target whose
// identity changed is lost: failed, out of rotation for the run, and loss_epoch() moves on, so
// that each writer checks, on its own thread, which of its files there are gone with it
// (RotatingFile::check_storage: counted lost, reason storage_lost). A lost target's
// directories are let go: held, a lazily unmounted file system would live until the stop.
// Writers hold them through a shared pointer taken under the lock while they open a file or
// check the identity, so letting go never closes a descriptor in use.
//
// Threads. Every writer thread of the run shares one OutputTargets: placement and state changes
// take a mutex (once per file opened, never per record); the write counters are relaxed atomics
// added to once per staging-buffer write and read by the metrics thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "writers/status.hpp"
#include "writers/unique_fd.hpp"
#include "writers/write_backlog.hpp"

namespace rocecap::writers {

enum class TargetState : uint8_t { active, full, failed };
std::string_view to_string(TargetState s) noexcept;

// Free bytes for an unprivileged writer on the file system holding `dir` (statvfs f_bavail *
// f_frsize); nullopt when statvfs fails. Tests substitute their own.
using FreeBytesFunction = std::function<std::optional<uint64_t>(const std::filesystem::path&)>;
std::optional<uint64_t> statvfs_free_bytes(const std::filesystem::path& dir);

struct TargetOptions {
  // A full target comes back into rotation with at least this many bytes free.
  uint64_t recover_bytes = uint64_t{64} << 20;
  // One write() slower than this takes the target out of rotation (failed, "stalled"); 0: never.
  std::chrono::nanoseconds stall = std::chrono::seconds(5);
  // A target is "falling behind" when its smoothed write latency is more than twice the
  // fastest target's AND above this floor (page-cache writes jitter by milliseconds).
  std::chrono::nanoseconds slow_floor = std::chrono::milliseconds(20);
  FreeBytesFunction free_bytes = statvfs_free_bytes;
  // The run's own directory below every target (config run.name), created when missing and
  // held open like the target itself: its removal or replacement is a lost target, and files
  // named below it are opened below it. Empty: none.
  std::string run_directory;
  // Per target (missing entries: none): a reason to leave it out of rotation from the start
  // (a target that could not be read for recovery at a restart, issue 23 item 10). Such a
  // target is never opened, created nor written to, so it is never re-created empty.
  std::vector<std::string> unavailable;
};

// One target as the metrics and the manifest see it.
struct TargetSnapshot {
  std::filesystem::path directory;
  TargetState state = TargetState::active;
  uint64_t bytes_written = 0;    // bytes handed to write() successfully on this target
  uint64_t writes = 0;           // write() calls (staging buffers) that succeeded
  uint64_t write_ns = 0;         // time spent in them
  uint64_t max_write_ns = 0;     // the slowest one
  uint64_t files = 0;            // files opened on it
  uint64_t free_bytes = 0;       // statvfs at the last placement or snapshot
  uint64_t out_of_rotation = 0;  // times it was taken out
  std::string reason;            // why it is (or last was) out of rotation; empty: never
  uint64_t backlog_bytes = 0;    // bytes of the writes in flight at the snapshot
  bool lost = false;             // its storage is lost: files written there may be gone
};

// Called (under the targets' lock, on a writer thread) when a target leaves or re-enters
// rotation; `reason` says why.
using TargetObserver =
    std::function<void(std::size_t target, TargetState state, const std::string& reason)>;

class OutputTargets {
 public:
  // `directories`: absolute, at least one. Opens each one (and options.run_directory below it)
  // and measures their free space (the run's weights). Throws std::runtime_error naming the
  // target when one cannot be opened.
  explicit OutputTargets(std::vector<std::filesystem::path> directories,
                         TargetOptions options = {});
  OutputTargets(const OutputTargets&) = delete;
  OutputTargets& operator=(const OutputTargets&) = delete;

  std::size_t size() const noexcept { return targets_.size(); }
  const std::filesystem::path& directory(std::size_t t) const { return targets_.at(t).dir; }
  void set_observer(TargetObserver observer);

  // The target for a new file that may grow to `expected_bytes`, reserved for it; nullopt when
  // every target is out of rotation (full ones that freed space are readmitted first).
  std::optional<std::size_t> place(uint64_t expected_bytes);
  // The file placed with `expected_bytes` ended with `bytes` (or was never opened: 0).
  void file_closed(std::size_t t, uint64_t expected_bytes, uint64_t bytes);
  void file_opened(std::size_t t) noexcept;
  // The writes in flight on target `t`: OutputFile adds its writes there (OutputOptions::backlog).
  WriteBacklog* backlog(std::size_t t) noexcept { return targets_[t].backlog.get(); }
  // One successful write() of `bytes` that took `ns`; a write past the stall bound takes the
  // target out of rotation (returns false then).
  bool wrote(std::size_t t, uint64_t bytes, uint64_t ns);
  // Takes `t` out of rotation for errno `err`; true when this call took it out (log it once).
  bool take_out(std::size_t t, int err, const std::string& why);
  // Which target `path` lies on (the longest directory prefix); nullopt: none.
  std::optional<std::size_t> target_of(const std::filesystem::path& path) const;
  bool in_rotation(std::size_t t) const;
  // Why target t is (or last was) out of rotation; empty: never.
  std::string reason(std::size_t t) const;
  // The same without the lock (one relaxed load): writers check it per record, so that a file
  // open on a target another writer took out moves on at once.
  bool in_rotation_relaxed(std::size_t t) const noexcept {
    return targets_[t].counters[kActive].load(std::memory_order_relaxed) != 0;
  }
  // Whether a target out of rotation is full (rather than failed): space may come back.
  bool any_full() const;

  // The directory file `relative` (a name template expanded) goes in on target `t`, opened
  // below the directories held since the start (created as needed), and its name there.
  Status open_parent(std::size_t t, const std::string& relative, UniqueFd& dir,
                     std::string& leaf) const;
  // Empty while target t's directory and run directory are still those opened at the start;
  // otherwise what happened (removed, replaced, unmounted or mounted over). A few syscalls, no
  // lock: at each file placed and on a timer, never per record.
  std::string identity_problem(std::size_t t) const;
  // identity_problem() for every target not lost yet; each changed one is lost. Returns how
  // many this call lost.
  std::size_t check_identity();
  // Target t's storage is lost (its directories changed, a file on it deleted): failed, out of
  // rotation for the run, and loss_epoch() moves on. With one target: nothing (the daemon's
  // run directory check stops the run). True when this call marked it lost.
  bool lose(std::size_t t, const std::string& why);
  bool lost(std::size_t t) const noexcept {
    return targets_[t].counters[kLost].load(std::memory_order_relaxed) != 0;
  }
  // Moves on each time a target is lost: a writer that saw another value checks its files.
  uint64_t loss_epoch() const noexcept { return epoch_.load(std::memory_order_acquire); }

  std::vector<TargetSnapshot> snapshot() const;

 private:
  enum Counter { kBytes, kWrites, kNs, kMaxNs, kActive, kLost, kCounters };
  // What a directory was when opened: a path naming something else now is another directory.
  struct Identity {
    uint64_t dev = 0, ino = 0, mnt = 0;
    bool has_mnt = false;  // statx gave the mount id (Linux 5.8+)
  };
  // The target and the run's directory on it, held from the start until the target is lost.
  struct Directories {
    UniqueFd root, run;
  };
  struct Target {
    std::filesystem::path dir;
    std::shared_ptr<const Directories> dirs;  // under mutex_; null: never opened, or lost
    Identity root_id, run_id;                 // set at the start, then only read
    TargetState state = TargetState::active;
    uint64_t start_free = 0;  // free bytes when the run started (or the target came back)
    uint64_t placed = 0;      // bytes placed since then (open files at their expected size)
    uint64_t free_now = 0;
    uint64_t free_at_out = 0;  // free bytes when it was last taken out
    uint64_t open = 0;         // files placed and not closed yet
    uint64_t files = 0;
    uint64_t out_count = 0;
    std::string reason;
    // Latency window for placement: the totals at the previous placement.
    uint64_t seen_writes = 0, seen_ns = 0;
    double recent_ns_per_write = 0;
    double lag_ns = 0;  // max(recent_ns_per_write, mean age of the backlog) at the placement
    std::unique_ptr<WriteBacklog> backlog;
    // Written on writer threads without the lock.
    std::unique_ptr<std::atomic<uint64_t>[]> counters;  // Counter; kActive: state is active
  };

  void refresh(Target& t);
  void update_latency(Target& t);
  double score(const Target& t, double reference, uint64_t expected) const;
  void set_state(std::size_t i, TargetState s, const std::string& reason);
  void open_target(Target& t, std::size_t index);
  std::shared_ptr<const Directories> directories(std::size_t t, std::string* reason) const;

  TargetOptions options_;
  mutable std::mutex mutex_;
  std::vector<Target> targets_;
  TargetObserver observer_;
  std::atomic<uint64_t> epoch_{0};
};

}  // namespace rocecap::writers
