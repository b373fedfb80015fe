#include "writers/output_targets.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "writers/output_path.hpp"
#include "writers/status.hpp"

namespace rocecap::writers {
namespace {
uint64_t monotonic_now_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

// statx of the directory open as `fd` (path empty) or of `path`; errno on failure.
bool statx_of(int fd, const char* path, struct statx& sx) noexcept {
  const int flags = fd >= 0 ? AT_EMPTY_PATH : 0;
  return ::statx(fd >= 0 ? fd : AT_FDCWD, fd >= 0 ? "" : path, flags,
                 STATX_BASIC_STATS | STATX_MNT_ID, &sx) == 0;
}

std::string device(uint64_t dev) {
  return fmt::format("{}:{}", major(dev), minor(dev));
}

}  // namespace

std::string_view to_string(TargetState s) noexcept {
  switch (s) {
    case TargetState::active:
      return "active";
    case TargetState::full:
      return "full";
    case TargetState::failed:
      return "failed";
  }
  return "unknown";
}

std::optional<uint64_t> statvfs_free_bytes(const std::filesystem::path& dir) {
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0) return std::nullopt;
  return uint64_t{st.f_bavail} * uint64_t{st.f_frsize};
}

OutputTargets::OutputTargets(std::vector<std::filesystem::path> directories, TargetOptions options)
    : options_(std::move(options)) {
  if (directories.empty()) throw std::invalid_argument("output targets: no directory");
  if (!options_.free_bytes) options_.free_bytes = statvfs_free_bytes;
  for (auto& d : directories) {
    Target t;
    t.dir = std::move(d);
    t.counters = std::make_unique<std::atomic<uint64_t>[]>(kCounters);
    for (int c = 0; c < kCounters; ++c)
      t.counters[c].store(0, std::memory_order_relaxed);
    t.backlog = std::make_unique<WriteBacklog>(monotonic_now_ns());
    const std::size_t i = targets_.size();
    const std::string why = i < options_.unavailable.size() ? options_.unavailable[i] : "";
    if (why.empty()) {
      open_target(t, i);
      t.counters[kActive].store(1, std::memory_order_relaxed);
      refresh(t);
      t.start_free = t.free_now;
    } else {  // never opened, so never created: out of rotation from the start
      t.state = TargetState::failed;
      t.reason = why;
      t.out_count = 1;
    }
    targets_.push_back(std::move(t));
  }
}

// Holds the target's directory, and the run's below it (created when missing, never through a
// symlink), for the whole run; what they are now is the identity checked later.
void OutputTargets::open_target(Target& t, std::size_t index) {
  const auto fail = [&](const std::string& what) {
    throw std::runtime_error(fmt::format("output target {} ({}): {}", index, t.dir.string(), what));
  };
  auto d = std::make_shared<Directories>();
  d->root.reset(::open(t.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  struct statx sx {};
  if (d->root.get() < 0 || !statx_of(d->root.get(), nullptr, sx)) fail(std::strerror(errno));
  t.root_id = {makedev(sx.stx_dev_major, sx.stx_dev_minor), sx.stx_ino, sx.stx_mnt_id,
               (sx.stx_mask & STATX_MNT_ID) != 0};
  if (!options_.run_directory.empty()) {
    std::string leaf;  // of a file in the run directory: the parent opened is the run directory
    const Status s =
        open_parent_at(d->root.get(), t.dir, options_.run_directory + "/file", d->run, leaf);
    if (!s) fail(s.message());
    if (!statx_of(d->run.get(), nullptr, sx)) fail(std::strerror(errno));
    t.run_id = {makedev(sx.stx_dev_major, sx.stx_dev_minor), sx.stx_ino, sx.stx_mnt_id,
                (sx.stx_mask & STATX_MNT_ID) != 0};
  }
  t.dirs = std::move(d);
}

std::shared_ptr<const OutputTargets::Directories> OutputTargets::directories(
    std::size_t t, std::string* reason) const {
  std::lock_guard lock(mutex_);
  const Target& x = targets_.at(t);
  if (reason != nullptr && !x.dirs) *reason = x.reason;
  return x.dirs;
}

void OutputTargets::set_observer(TargetObserver observer) {
  std::lock_guard lock(mutex_);
  observer_ = std::move(observer);
}

void OutputTargets::refresh(Target& t) {
  if (const auto free = options_.free_bytes(t.dir)) t.free_now = *free;
}

// Mean latency of the writes since the previous placement, smoothed over placements (kept
// when there were none).
void OutputTargets::update_latency(Target& t) {
  const uint64_t writes = t.counters[kWrites].load(std::memory_order_relaxed);
  const uint64_t ns = t.counters[kNs].load(std::memory_order_relaxed);
  if (writes > t.seen_writes) {
    const double window = double(ns - t.seen_ns) / double(writes - t.seen_writes);
    t.recent_ns_per_write =
        t.recent_ns_per_write == 0 ? window : 0.7 * t.recent_ns_per_write + 0.3 * window;
  }
  t.seen_writes = writes;
  t.seen_ns = ns;
}

// The share of its weight this run has used, had it the new file too (lowest wins): the
// weight is the free space at the start, divided by how far its lag is behind the reference
// when that is more than twice and more than the latency floor (a target falling behind gets
// proportionally fewer files, never none, so its latency keeps being measured).
double OutputTargets::score(const Target& t, double reference, uint64_t expected) const {
  double weight = double(t.start_free);
  if (t.lag_ns > 2 * reference && t.lag_ns > double(options_.slow_floor.count())) {
    weight /= t.lag_ns / reference;
  }
  if (weight < 1) return std::numeric_limits<double>::infinity();
  // + open: among targets with nothing placed yet, the one with the fewest open files.
  return double(t.placed + expected + t.open) / weight;
}

std::optional<std::size_t> OutputTargets::place(uint64_t expected_bytes) {
  std::lock_guard lock(mutex_);
  const uint64_t now = monotonic_now_ns();
  double reference = -1;
  for (std::size_t i = 0; i < targets_.size(); ++i) {
    Target& t = targets_[i];
    refresh(t);
    update_latency(t);
    t.lag_ns = std::max(t.recent_ns_per_write, double(t.backlog->sample(now).mean_age_ns));
    // Back when space was freed since it filled (a quota, EDQUOT, can refuse writes while
    // statvfs shows room: such a target is not readmitted on statvfs alone).
    if (t.state == TargetState::full && t.free_now >= options_.recover_bytes &&
        t.free_now >= t.free_at_out + options_.recover_bytes) {
      // Space was freed: its room is counted again from what is free now.
      t.start_free = t.free_now + t.placed;
      set_state(i, TargetState::active,
                fmt::format("{} bytes free again (at least {} needed)", t.free_now,
                            options_.recover_bytes));
    }
    if (t.state == TargetState::active && (reference < 0 || t.lag_ns < reference)) {
      reference = t.lag_ns;
    }
  }
  if (reference <= 0) reference = double(options_.slow_floor.count());
  std::optional<std::size_t> best;
  double best_score = 0;
  for (std::size_t i = 0; i < targets_.size(); ++i) {
    const Target& t = targets_[i];
    if (t.state != TargetState::active) continue;
    const double s = score(t, reference, expected_bytes);
    if (!best || s < best_score) best_score = s, best = i;
  }
  if (best) {
    targets_[*best].placed += expected_bytes;
    ++targets_[*best].open;
  }
  return best;
}

void OutputTargets::file_opened(std::size_t t) noexcept {
  std::lock_guard lock(mutex_);
  ++targets_[t].files;
}

void OutputTargets::file_closed(std::size_t t, uint64_t expected_bytes, uint64_t bytes) {
  std::lock_guard lock(mutex_);
  Target& x = targets_.at(t);
  x.placed = x.placed - std::min(x.placed, expected_bytes) + bytes;
  x.open -= std::min<uint64_t>(x.open, 1);
}

bool OutputTargets::wrote(std::size_t t, uint64_t bytes, uint64_t ns) {
  auto& c = targets_[t].counters;
  c[kBytes].fetch_add(bytes, std::memory_order_relaxed);
  c[kWrites].fetch_add(1, std::memory_order_relaxed);
  c[kNs].fetch_add(ns, std::memory_order_relaxed);
  uint64_t max = c[kMaxNs].load(std::memory_order_relaxed);
  while (ns > max && !c[kMaxNs].compare_exchange_weak(max, ns, std::memory_order_relaxed)) {
  }
  // The only target is never taken out: there would be nowhere to write.
  if (targets_.size() < 2 || options_.stall.count() <= 0 || ns <= uint64_t(options_.stall.count()))
    return true;
  take_out(t, ETIMEDOUT,
           fmt::format("a write took {:.3f} s, more than the stall bound of {:.3f} s",
                       double(ns) / 1e9, double(options_.stall.count()) / 1e9));
  return false;
}

bool OutputTargets::take_out(std::size_t t, int err, const std::string& why) {
  std::lock_guard lock(mutex_);
  Target& x = targets_.at(t);
  if (x.state != TargetState::active) return false;
  const bool full = err == ENOSPC || err == EDQUOT || err == EFBIG;
  ++x.out_count;
  refresh(x);
  x.free_at_out = x.free_now;
  set_state(t, full ? TargetState::full : TargetState::failed, why);
  return true;
}

void OutputTargets::set_state(std::size_t i, TargetState s, const std::string& reason) {
  targets_[i].state = s;
  targets_[i].reason = reason;
  targets_[i].counters[kActive].store(s == TargetState::active ? 1 : 0, std::memory_order_relaxed);
  if (observer_) observer_(i, s, reason);
}

std::optional<std::size_t> OutputTargets::target_of(const std::filesystem::path& path) const {
  std::optional<std::size_t> best;
  std::size_t best_len = 0;
  const std::string p = path.lexically_normal().string();
  for (std::size_t i = 0; i < targets_.size(); ++i) {
    std::string d = targets_[i].dir.lexically_normal().string();
    if (!d.empty() && d.back() != '/') d += '/';
    if (p.compare(0, d.size(), d) == 0 && d.size() > best_len) best = i, best_len = d.size();
  }
  return best;
}

bool OutputTargets::any_full() const {
  std::lock_guard lock(mutex_);
  return std::any_of(targets_.begin(), targets_.end(),
                     [](const Target& t) { return t.state == TargetState::full; });
}

std::string OutputTargets::reason(std::size_t t) const {
  std::lock_guard lock(mutex_);
  return targets_.at(t).reason;
}

bool OutputTargets::in_rotation(std::size_t t) const {
  std::lock_guard lock(mutex_);
  return targets_.at(t).state == TargetState::active;
}

std::vector<TargetSnapshot> OutputTargets::snapshot() const {
  std::lock_guard lock(mutex_);
  std::vector<TargetSnapshot> out;
  for (const Target& t : targets_) {
    TargetSnapshot s;
    s.directory = t.dir;
    s.state = t.state;
    s.bytes_written = t.counters[kBytes].load(std::memory_order_relaxed);
    s.writes = t.counters[kWrites].load(std::memory_order_relaxed);
    s.write_ns = t.counters[kNs].load(std::memory_order_relaxed);
    s.max_write_ns = t.counters[kMaxNs].load(std::memory_order_relaxed);
    s.files = t.files;
    s.free_bytes = options_.free_bytes(t.dir).value_or(t.free_now);
    s.out_of_rotation = t.out_count;
    s.reason = t.reason;
    s.backlog_bytes = t.backlog->sample(0).bytes;
    s.lost = t.counters[kLost].load(std::memory_order_relaxed) != 0;
    out.push_back(std::move(s));
  }
  return out;
}

// A target not open (unavailable at the start, or lost since it was placed) is ENODEV: a
// storage loss, so the writer takes it out and tries another (RotatingFile::open_on_target).
Status OutputTargets::open_parent(std::size_t t, const std::string& relative, UniqueFd& dir,
                                  std::string& leaf) const {
  const Target& x = targets_.at(t);
  std::string reason;
  const std::shared_ptr<const Directories> d = directories(t, &reason);
  if (!d) {
    return Status::error(
        ENODEV, fmt::format("output target {} ({}) is not open: {}", t, x.dir.string(), reason),
        x.dir / relative);
  }
  // A file of the run's directory is opened below that directory as it was opened, whatever
  // its path names now (removed: ENOENT, the target is failed and the file goes elsewhere).
  const std::string prefix = options_.run_directory + "/";
  if (d->run.get() >= 0 && relative.compare(0, prefix.size(), prefix) == 0) {
    return open_parent_at(d->run.get(), x.dir / options_.run_directory,
                          relative.substr(prefix.size()), dir, leaf);
  }
  return open_parent_at(d->root.get(), x.dir, relative, dir, leaf);
}

// What the directory open as `fd` (`id` when opened) and its path `path` say now: empty when
// the path still names it, on the same mount.
static std::string directory_changed(int fd, const std::filesystem::path& path, const char* what,
                                     uint64_t dev, uint64_t ino, uint64_t mnt, bool has_mnt) {
  struct statx open_now {};
  if (statx_of(fd, nullptr, open_now) && open_now.stx_nlink == 0) {
    return fmt::format("the {} {} was removed", what, path.string());
  }
  struct statx now {};
  if (!statx_of(-1, path.c_str(), now)) {
    return fmt::format("the {} {} is gone: {}", what, path.string(), std::strerror(errno));
  }
  const uint64_t dev_now = makedev(now.stx_dev_major, now.stx_dev_minor);
  if (dev_now != dev) {
    return fmt::format(
        "the mount of the {} {} changed: the path is now on device {}, the directory written to is "
        "on {} (unmounted, umount -l, or mounted over)",
        what, path.string(), device(dev_now), device(dev));
  }
  if (has_mnt && (now.stx_mask & STATX_MNT_ID) != 0 && now.stx_mnt_id != mnt) {
    return fmt::format("the mount of the {} {} changed (mount id {}, was {})", what, path.string(),
                       now.stx_mnt_id, mnt);
  }
  if (now.stx_ino != ino) {
    return fmt::format("the {} {} was replaced (another directory now has its name)", what,
                       path.string());
  }
  return {};
}

std::string OutputTargets::identity_problem(std::size_t t) const {
  const std::shared_ptr<const Directories> d = directories(t, nullptr);
  if (!d) return {};  // never opened, or lost already
  const Target& x = targets_.at(t);
  const Identity& r = x.root_id;
  std::string why =
      directory_changed(d->root.get(), x.dir, "output target", r.dev, r.ino, r.mnt, r.has_mnt);
  if (!why.empty() || d->run.get() < 0) return why;
  const Identity& rd = x.run_id;
  return directory_changed(d->run.get(), x.dir / options_.run_directory, "run directory", rd.dev,
                           rd.ino, rd.mnt, rd.has_mnt);
}

std::size_t OutputTargets::check_identity() {
  if (targets_.size() < 2) return 0;
  std::size_t n = 0;
  for (std::size_t t = 0; t < targets_.size(); ++t) {
    if (lost(t)) continue;
    if (const std::string why = identity_problem(t); !why.empty() && lose(t, why)) ++n;
  }
  return n;
}

bool OutputTargets::lose(std::size_t t, const std::string& why) {
  // The only target is never taken out: there would be nowhere to write.
  if (targets_.size() < 2) return false;
  {
    std::lock_guard lock(mutex_);
    Target& x = targets_.at(t);
    if (x.counters[kLost].exchange(1, std::memory_order_relaxed) != 0) return false;
    if (x.state == TargetState::active) {
      ++x.out_count;
      refresh(x);
      x.free_at_out = x.free_now;
    }
    // Reported even when it was out already (full, or failed by EIO): the loss is the news.
    set_state(t, TargetState::failed, "storage lost: " + why);
    // Let go (closed once no writer holds them any more).
    x.dirs.reset();
  }
  epoch_.fetch_add(1, std::memory_order_acq_rel);
  return true;
}

}  // namespace rocecap::writers
