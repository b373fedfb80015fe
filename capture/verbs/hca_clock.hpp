// Raw HCA clock ticks -> wall-clock ns: the completion timestamps of the verbs backend, which
// never asks libmlx5 for WALLCLOCK (completion_queue.cpp says why). A slow path samples
// (ticks, CLOCK_REALTIME) pairs and fits a line through them; the capture thread converts
// each completion with a handful of integer operations on the published fit:
//   ns = base_ns + ((ticks - base_ticks) & mask) * mult >> 32
// Pure arithmetic, no verbs: unit-tested on its own (tests/unit/verbs_hca_clock_test.cpp).
#pragma once

#include <array>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace rocecap::capture::verbs {

__extension__ using Uint128 = unsigned __int128;  // -Wpedantic: a GCC/clang extension

// One linear map from ticks to ns, anchored at (base_ticks, base_ns).
struct ClockMap {
  static constexpr unsigned kShift = 32;
  uint64_t base_ticks = 0;
  int64_t base_ns = 0;
  uint64_t mult = 0;  // ns per tick << kShift
  uint64_t mask = 0;  // completion_timestamp_mask: ticks wrap at mask + 1
  uint64_t half = 0;  // mask >> 1, kept with it: to_ns runs per completion

  ClockMap() = default;
  ClockMap(uint64_t ticks, int64_t ns, uint64_t multiplier, uint64_t wrap_mask) noexcept
      : base_ticks(ticks), base_ns(ns), mult(multiplier), mask(wrap_mask), half(wrap_mask >> 1) {}

  // Ticks within half the wrap period before the base count as earlier (a completion taken
  // before the latest refresh), the rest as later. Unsigned arithmetic: a garbage tick value
  // gives a garbage time, never undefined behaviour.
  int64_t to_ns(uint64_t ticks) const noexcept {
    const auto base = static_cast<uint64_t>(base_ns);
    const uint64_t d = (ticks - base_ticks) & mask;
    if (d <= half) {
      return static_cast<int64_t>(base + static_cast<uint64_t>((Uint128{d} * mult) >> kShift));
    }
    const uint64_t back = (base_ticks - ticks) & mask;
    return static_cast<int64_t>(base - static_cast<uint64_t>((Uint128{back} * mult) >> kShift));
  }
};

// ns per tick of a clock running at `khz`, as a ClockMap multiplier.
inline uint64_t nominal_mult(uint64_t khz) noexcept {
  return khz == 0 ? 0 : static_cast<uint64_t>((Uint128{1'000'000} << ClockMap::kShift) / khz);
}

// Least-squares line through the latest kSamples (ticks, ns) samples, unwrapping ticks with
// the mask. Until two samples are kMinSpanNs apart the nominal rate (hca_core_clock) is used:
// a slope from samples a few ms apart would be mostly sampling jitter.
class ClockFit {
 public:
  static constexpr std::size_t kSamples = 16;
  static constexpr int64_t kMinSpanNs = 500'000'000;

  ClockFit(uint64_t khz, uint64_t mask) noexcept : nominal_(nominal_mult(khz)), mask_(mask) {}

  void add(uint64_t ticks, int64_t ns) noexcept {
    samples_[next_ % kSamples] = {ticks & mask_, ns};
    ++next_;
  }
  std::size_t samples() const noexcept { return next_ < kSamples ? next_ : kSamples; }

  // The map anchored at the newest sample. Needs at least one sample.
  ClockMap map() const noexcept {
    const Sample& newest = samples_[(next_ - 1) % kSamples];
    ClockMap m{newest.ticks, newest.ns, nominal_, mask_};
    const std::size_t n = samples();
    if (n < 2) return m;
    // Offsets from the newest sample keep the sums small enough for doubles to be exact
    // to well below a nanosecond per tick over the window.
    // Ticks tell sample ages apart only within a wrap period: older samples are left out.
    const double max_age = std::ldexp(static_cast<double>(mask_) * static_cast<double>(nominal_),
                                      -static_cast<int>(ClockMap::kShift) - 1);
    double st = 0, sn = 0, stt = 0, stn = 0, span = 0, used = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const Sample& s = samples_[i];
      const double t = -static_cast<double>((newest.ticks - s.ticks) & mask_);
      const double y = static_cast<double>(s.ns - newest.ns);
      if (-y > max_age || y > 0) continue;
      used += 1;
      st += t;
      sn += y;
      stt += t * t;
      stn += t * y;
      span = std::fmax(span, -y);
    }
    const double var = stt - st * st / used;
    if (span < static_cast<double>(kMinSpanNs) || var <= 0) return m;
    const double slope = (stn - st * sn / used) / var;  // ns per tick
    const double intercept = (sn - slope * st) / used;  // ns at newest
    if (!(slope > 0) || slope > 1e6) return m;          // nonsense samples: keep the nominal rate
    m.mult = static_cast<uint64_t>(std::ldexp(slope, ClockMap::kShift));
    m.base_ns = newest.ns + static_cast<int64_t>(std::llround(intercept));
    return m;
  }

 private:
  struct Sample {
    uint64_t ticks = 0;
    int64_t ns = 0;
  };
  uint64_t nominal_;
  uint64_t mask_;
  std::array<Sample, kSamples> samples_{};
  std::size_t next_ = 0;
};

// One writer (the refresh path), one or more readers (the capture thread), no locks: a
// sequence lock whose fields are atomics, so a reader that raced a write retries and never
// reads a torn map.
class PublishedClock {
 public:
  void publish(const ClockMap& m) noexcept {
    const uint32_t s = seq_.load(std::memory_order_relaxed);
    seq_.store(s + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    base_ticks_.store(m.base_ticks, std::memory_order_relaxed);
    base_ns_.store(m.base_ns, std::memory_order_relaxed);
    mult_.store(m.mult, std::memory_order_relaxed);
    mask_.store(m.mask, std::memory_order_relaxed);
    seq_.store(s + 2, std::memory_order_release);
  }

  ClockMap load() const noexcept {
    for (;;) {
      const uint32_t s = seq_.load(std::memory_order_acquire);
      ClockMap m{base_ticks_.load(std::memory_order_relaxed),
                 base_ns_.load(std::memory_order_relaxed), mult_.load(std::memory_order_relaxed),
                 mask_.load(std::memory_order_relaxed)};
      std::atomic_thread_fence(std::memory_order_acquire);
      if ((s & 1) == 0 && seq_.load(std::memory_order_relaxed) == s) return m;
    }
  }

  int64_t to_ns(uint64_t ticks) const noexcept { return load().to_ns(ticks); }

 private:
  std::atomic<uint32_t> seq_{0};
  std::atomic<uint64_t> base_ticks_{0};
  std::atomic<int64_t> base_ns_{0};
  std::atomic<uint64_t> mult_{0};
  std::atomic<uint64_t> mask_{0};
};

}  // namespace rocecap::capture::verbs
