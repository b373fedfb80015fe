#include "writers/output_targets.hpp"

#include <fmt/format.h>
#include <sys/statvfs.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "writers/status.hpp"

namespace rocecap::writers {
namespace {
uint64_t monotonic_now_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
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
    t.counters[kActive].store(1, std::memory_order_relaxed);
    t.backlog = std::make_unique<WriteBacklog>(monotonic_now_ns());
    refresh(t);
    t.start_free = t.free_now;
    targets_.push_back(std::move(t));
  }
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
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace rocecap::writers
