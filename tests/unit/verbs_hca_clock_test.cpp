// Raw HCA ticks -> wall-clock ns (capture/verbs/hca_clock.hpp): the nominal rate, wrap at the
// completion_timestamp_mask in both directions, a drifting clock fitted from jittery samples,
// and the lock-free publication never handing out a torn map.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <thread>

#include "capture/verbs/hca_clock.hpp"

namespace rocecap::capture::verbs {
namespace {

constexpr uint64_t kKhz = 156250;  // ConnectX-4 Lx: 6.4 ns per tick
constexpr uint64_t kMask63 = 0x7fffffffffffffffULL;
constexpr int64_t kT0 = 1'790'000'000'000'000'000;  // 2026-09 in Unix ns

// A simulated free-running clock: `hz` ticks per second from tick `origin` at kT0.
struct SimClock {
  double hz;
  uint64_t origin;
  uint64_t mask;
  uint64_t ticks_at(int64_t ns) const {
    return (origin + static_cast<uint64_t>(static_cast<double>(ns - kT0) * hz / 1e9)) & mask;
  }
};

// Deterministic +-amplitude jitter, as host clock reads around the NIC read would give.
int64_t jitter(uint64_t i, int64_t amplitude) {
  const uint64_t x = (i * 2654435761u) % 2001;  // 0..2000
  return (static_cast<int64_t>(x) - 1000) * amplitude / 1000;
}

TEST(HcaClock, NominalRateFromOneSample) {
  ClockFit fit(kKhz, kMask63);
  fit.add(5'000'000, kT0);
  const ClockMap m = fit.map();
  // One second of ticks is one second of ns, to within the multiplier's rounding.
  EXPECT_LE(std::llabs(m.to_ns(5'000'000 + 156'250'000) - (kT0 + 1'000'000'000)), 1);
  EXPECT_LE(std::llabs(m.to_ns(5'000'000 + 1'562) - (kT0 + 9'997)), 1);  // 1562 ticks * 6.4 ns
  EXPECT_EQ(m.to_ns(5'000'000), kT0);
}

TEST(HcaClock, TicksWrapAtTheMaskForwardAndBack) {
  constexpr uint64_t kMask32 = 0xffffffffULL;
  ClockFit fit(kKhz, kMask32);
  const uint64_t base = kMask32 - 999;  // 1000 ticks before the wrap
  fit.add(base, kT0);
  const ClockMap m = fit.map();
  // 1000 ticks to the wrap (mask -> 0 is one) and 5000 after it: 6000 ticks = 38400 ns.
  EXPECT_LE(std::llabs(m.to_ns(5000) - (kT0 + 38'400)), 1);
  // A completion taken before the base sample (refresh raced the poll), across no wrap...
  EXPECT_LE(std::llabs(m.to_ns(base - 500) - (kT0 - 3'200)), 1);
  // ...and one before a base that is itself just past the wrap.
  ClockFit after(kKhz, kMask32);
  after.add(100, kT0);
  EXPECT_LE(std::llabs(after.map().to_ns(kMask32 - 99) - (kT0 - 1'280)), 1);  // 200 ticks earlier
  // High bits beyond the mask are ignored, as the NIC never sets them.
  EXPECT_EQ(m.to_ns(4999 | (uint64_t{1} << 40)), m.to_ns(4999));
}

TEST(HcaClock, FitFollowsADriftingClock) {
  // The NIC's oscillator runs 100 ppm fast: the nominal rate is 100 us off after a second.
  const SimClock nic{156.25e6 * (1 + 100e-6), 123'456'789, kMask63};
  ClockFit fit(kKhz, kMask63);
  int64_t last_ns = 0;
  for (uint64_t i = 0; i < 20; ++i) {  // more samples than the window keeps
    last_ns = kT0 + static_cast<int64_t>(i) * 1'000'000'000;
    fit.add(nic.ticks_at(last_ns), last_ns + jitter(i, 300));
  }
  const ClockMap m = fit.map();
  const int64_t probe = last_ns + 700'000'000;  // a completion 0.7 s after the last sample
  EXPECT_LT(std::llabs(m.to_ns(nic.ticks_at(probe)) - probe), 1'000);
  ClockFit nominal(kKhz, kMask63);
  nominal.add(nic.ticks_at(last_ns), last_ns);
  EXPECT_GT(std::llabs(nominal.map().to_ns(nic.ticks_at(probe)) - probe), 50'000)
      << "the probe does not tell a fitted rate from the nominal one";
}

TEST(HcaClock, FitAcrossAWrapOfANarrowCounter) {
  // 31-bit ticks at 156.25 MHz wrap every 13.7 s, 12 s into the samples: the fit unwraps
  // the samples of the last half wrap period (6.9 s) and leaves the older, ambiguous ones out.
  constexpr uint64_t kMask31 = 0x7fffffffULL;
  const SimClock nic{156.25e6 * (1 - 40e-6), kMask31 - 156'250'000ULL * 12, kMask31};
  ClockFit fit(kKhz, kMask31);
  int64_t ns = 0;
  for (uint64_t i = 0; i < 16; ++i) {
    ns = kT0 + static_cast<int64_t>(i) * 1'000'000'000;
    fit.add(nic.ticks_at(ns), ns + jitter(i, 200));
  }
  const ClockMap m = fit.map();
  for (const int64_t later : {int64_t{1'000}, int64_t{400'000'000}, int64_t{-900'000'000}}) {
    EXPECT_LT(std::llabs(m.to_ns(nic.ticks_at(ns + later)) - (ns + later)), 1'000) << later;
  }
}

TEST(HcaClock, SamplesTooCloseOrNonsenseKeepTheNominalRate) {
  ClockFit fit(kKhz, kMask63);
  fit.add(1'000'000, kT0);
  fit.add(1'000'100, kT0 + 100'000'000);  // 100 ticks in 0.1 s: absurd, and too short a span
  EXPECT_EQ(fit.map().mult, nominal_mult(kKhz));
  ClockFit backwards(kKhz, kMask63);
  backwards.add(1'000'000, kT0 + 2'000'000'000);
  backwards.add(2'000'000'000, kT0);  // host time went backwards (a clock step)
  EXPECT_EQ(backwards.map().mult, nominal_mult(kKhz));
  EXPECT_EQ(nominal_mult(0), 0u);
}

TEST(HcaClock, PublishedMapIsNeverTorn) {
  PublishedClock clock;
  clock.publish(ClockMap{0, 0, 1, kMask63});
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (uint64_t i = 1; !stop.load(std::memory_order_relaxed); ++i) {
      // Every field derives from i: a torn read mixes two i's.
      clock.publish(ClockMap{i, static_cast<int64_t>(3 * i), 5 * i, kMask63});
    }
  });
  uint64_t reads = 0, torn = 0, last = 0, backwards = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  while (std::chrono::steady_clock::now() < end) {
    const ClockMap m = clock.load();
    ++reads;
    if (m.base_ticks != 0 && (m.base_ns != static_cast<int64_t>(3 * m.base_ticks) ||
                              m.mult != 5 * m.base_ticks || m.mask != kMask63)) {
      ++torn;
    }
    if (m.base_ticks < last) ++backwards;
    last = m.base_ticks;
  }
  stop = true;
  writer.join();
  EXPECT_GT(reads, 1000u);
  EXPECT_EQ(torn, 0u);
  EXPECT_EQ(backwards, 0u);
  EXPECT_GT(last, 0u) << "the reader never saw a publication";
}

}  // namespace
}  // namespace rocecap::capture::verbs
