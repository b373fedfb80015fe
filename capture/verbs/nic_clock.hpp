// The NIC's PTP hardware clock (PHC) as IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK delivers
// it, mapped to CLOCK_REALTIME (UTC). Pure arithmetic and a lock-free hand-off, no verbs:
// unit-tested on its own (tests/unit/verbs_nic_clock_test.cpp).
//
// What libmlx5 returns (rdma-core providers/mlx5/cq.c, mlx5_cq_fill_pfns, v44 and later):
// - with the kernel's clock-info page (mlx5.c mlx5_map_clock_info, MLX5_IB_CLOCK_INFO_V1),
//   mlx5_cq_read_wc_completion_wallclock_ns: the CQE's cycle count through mlx5dv_ts_to_ns,
//   i.e. the PHC in ns. The PHC is whatever the kernel's mlx5 clock holds: TAI (UTC + 37 s)
//   once ptp4l disciplines it, otherwise a free-running clock set at driver load and drifting
//   with the NIC's oscillator. It is not CLOCK_REALTIME.
// - on a device in real-time clock mode (MLX5_CTX_FLAGS_REAL_TIME_TS_SUPPORTED) and a CQ
//   created with WALLCLOCK but without COMPLETION_TIMESTAMP: mlx5_cq_read_wc_completion_ts,
//   the raw CQE field, which is then seconds << 32 | nanoseconds (the kernel decodes the same
//   field with mlx5_real_time_cyc2time: hi * NSEC_PER_SEC + lo). Only mlx5dv_query_device's
//   MLX5DV_CONTEXT_FLAGS_REAL_TIME_TS tells which; rocecap links libibverbs alone (and runs on
//   softverbs, which has no libmlx5), so the encoding is detected from the first value: the two
//   readings of one value are decades apart, and only one lies near CLOCK_REALTIME.
// The offset to UTC is measured: the capture thread pairs a completion's NIC time with a host
// clock read taken right after that completion was found (so the NIC time is never later),
// keeps the pair with the smallest difference out of a few batches, and the slow path fits a
// line through those pairs (ClockFit of hca_clock.hpp, one NIC ns per "tick").
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

#include "capture/verbs/hca_clock.hpp"

namespace rocecap::capture::verbs {

enum class WallclockEncoding : int {
  unknown = 0,
  ns = 1,        // nanoseconds (clock-info conversion)
  realtime = 2,  // seconds << 32 | nanoseconds (real-time clock mode, raw CQE field)
};
const char* encoding_name(WallclockEncoding e) noexcept;

inline uint64_t decode_wallclock(uint64_t v, WallclockEncoding e) noexcept {
  if (e != WallclockEncoding::realtime) return v;
  return (v >> 32) * 1'000'000'000u + (v & 0xffffffffu);
}

// The reading of `v` that lies nearer `host_ns`. A real-time value has nanoseconds below 1e9
// in its low word; for a clock within decades of the host clock the two readings are far apart
// (7.7e18 vs 1.8e18 ns for 2026), so the choice is unambiguous.
WallclockEncoding detect_encoding(uint64_t v, int64_t host_ns) noexcept;

// The ClockFit for NIC ns -> CLOCK_REALTIME ns: one tick per ns, no wrap.
inline ClockFit nic_ns_fit() noexcept {
  return ClockFit(1'000'000, std::numeric_limits<uint64_t>::max());
}

// What the offset (NIC clock minus CLOCK_REALTIME) looks like, for one log line.
struct OffsetClass {
  enum Kind { utc, tai, other } kind = other;
  long seconds = 0;  // the whole number of seconds it is near (utc, tai)
  bool operator==(const OffsetClass&) const = default;
};
// A PHC disciplined by ptp4l is within microseconds of TAI; the measured offset adds the
// smallest poll latency seen (microseconds when busy polling, up to milliseconds on a loaded
// host or with a completion channel). kWholeSecondTolerance = 10 ms leaves room for that and
// still gives a free-running clock only a 2 % chance of being taken for TAI by accident. TAI
// is 10 (1972) to 37 (since 2017-01-01) s ahead of UTC; up to 40 allows for leap seconds
// still to come. `previous` adds hysteresis: a class is kept until the offset is twice the
// tolerance away from it, so jitter at the edge does not flap the log.
inline constexpr double kWholeSecondTolerance = 0.010;
inline constexpr long kMinLeapSeconds = 10;
inline constexpr long kMaxLeapSeconds = 40;
inline constexpr long kTaiMinusUtc = 37;  // IERS Bulletin C: since 2017-01-01
OffsetClass classify_offset(double offset_s, const OffsetClass* previous = nullptr) noexcept;
// "the NIC clock looks like TAI: 37.000012 s ahead of CLOCK_REALTIME (...)" and the like.
std::string describe_offset(double offset_s, const OffsetClass& c);

// One interface's nic-wallclock timestamps never step back by less than a clock step: the
// first offset map replaces host time read at poll (late by the poll's latency) with the NIC's
// time through a single sample, so the first stamps after it can fall a few hundred us behind
// the last host-time ones, and pcap readers expect an interface's records in time order. Such
// a step back is held at the last stamp; a longer one (a PHC step the fit has not absorbed
// yet) is passed on rather than freezing the stamps for that long. Capture thread only.
class StampFloor {
 public:
  static constexpr int64_t kClockStepNs = 50'000'000;
  int64_t apply(int64_t stamp_ns) noexcept {
    if (stamp_ns < last_ns_ && last_ns_ - stamp_ns < kClockStepNs) return last_ns_;
    last_ns_ = stamp_ns;
    return stamp_ns;
  }

 private:
  int64_t last_ns_ = 0;
};

// Pairs (NIC value, host ns) handed from the capture thread to the slow path without locks:
// the slow path asks for `n` samples; the capture thread offers one per polled batch while
// some are wanted, keeps the one with the smallest host - NIC difference and hands it over by
// counting down to 0. The counter says who owns the fields (capture thread while it is
// non-zero, slow path while it is 0), so they need no atomics of their own.
class SampleHandoff {
 public:
  // ---- slow path ----
  void request(uint32_t n) noexcept {
    best_delay_ = std::numeric_limits<int64_t>::max();
    pending_ = true;
    want_.store(n, std::memory_order_release);
  }
  bool pending() const noexcept { return pending_; }
  // The requested samples' best pair, once all were offered.
  bool take(uint64_t& nic, int64_t& host_ns) noexcept {
    if (!pending_ || want_.load(std::memory_order_acquire) != 0) return false;
    pending_ = false;
    nic = best_nic_;
    host_ns = best_host_;
    return true;
  }

  // ---- capture thread ----
  bool wanted() const noexcept { return want_.load(std::memory_order_relaxed) != 0; }
  void offer(uint64_t nic, int64_t host_ns, WallclockEncoding e) noexcept {
    const uint32_t n = want_.load(std::memory_order_acquire);
    if (n == 0) return;
    const int64_t delay = host_ns - static_cast<int64_t>(decode_wallclock(nic, e));
    if (delay < best_delay_) {
      best_delay_ = delay;
      best_nic_ = nic;
      best_host_ = host_ns;
    }
    want_.store(n - 1, std::memory_order_release);
  }

 private:
  std::atomic<uint32_t> want_{0};
  bool pending_ = false;  // slow path only
  int64_t best_delay_ = 0;
  uint64_t best_nic_ = 0;
  int64_t best_host_ = 0;
};

}  // namespace rocecap::capture::verbs
