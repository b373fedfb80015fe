// The NIC's PHC mapped to UTC (capture/verbs/nic_clock.hpp) and mlx5's CQ rounding
// (capture/verbs/cq_size.hpp): the real-time encoding and its detection, the TAI / UTC /
// free-running classification with its tolerance and hysteresis, the capture-thread sample
// hand-off, the fit of a drifting TAI clock, and which CQ sizes a device with a given max_cqe
// can make.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>

#include "capture/verbs/cq_size.hpp"
#include "capture/verbs/nic_clock.hpp"

namespace rocecap::capture::verbs {
namespace {

constexpr int64_t kT0 = 1'790'000'000'123'456'789;  // 2026-09 in Unix ns
constexpr int64_t kTai = 37'000'000'000;

uint64_t rt_encode(uint64_t ns) {
  return (ns / 1'000'000'000) << 32 | (ns % 1'000'000'000);
}

TEST(NicClock, RealTimeEncodingDecodes) {
  EXPECT_EQ(decode_wallclock(rt_encode(kT0), WallclockEncoding::realtime), uint64_t{kT0});
  EXPECT_EQ(decode_wallclock(12345, WallclockEncoding::ns), 12345u);
  EXPECT_EQ(decode_wallclock(uint64_t{3} << 32 | 5, WallclockEncoding::realtime), 3'000'000'005u);
}

TEST(NicClock, EncodingDetectedFromTheValue) {
  EXPECT_EQ(detect_encoding(kT0 + kTai, kT0), WallclockEncoding::ns);  // TAI in ns
  EXPECT_EQ(detect_encoding(kT0 - 5'000'000'000'000, kT0), WallclockEncoding::ns);
  EXPECT_EQ(detect_encoding(rt_encode(kT0 + kTai), kT0), WallclockEncoding::realtime);
  EXPECT_EQ(detect_encoding(rt_encode(kT0), kT0 + 2'000'000), WallclockEncoding::realtime);
  // A value whose low word is no nanosecond count cannot be real-time encoded.
  EXPECT_EQ(detect_encoding(uint64_t{1'790'000'000} << 32 | 0xfffffff0u, kT0),
            WallclockEncoding::ns);
}

TEST(NicClock, OffsetClassification) {
  using K = OffsetClass;
  EXPECT_EQ(classify_offset(37.0004), (OffsetClass{K::tai, 37}));
  EXPECT_EQ(classify_offset(36.995), (OffsetClass{K::tai, 37}));
  EXPECT_EQ(classify_offset(37.02).kind, K::other);  // beyond 10 ms
  EXPECT_EQ(classify_offset(-0.003), (OffsetClass{K::utc, 0}));
  EXPECT_EQ(classify_offset(3.0).kind, K::other);               // no leap-second count
  EXPECT_EQ(classify_offset(512.0).kind, K::other);             // a free-running clock by chance
  EXPECT_EQ(classify_offset(35.0), (OffsetClass{K::tai, 35}));  // a stale UTC offset
  // Hysteresis: once TAI, it stays TAI up to twice the tolerance.
  const OffsetClass tai{K::tai, 37};
  EXPECT_EQ(classify_offset(37.015, &tai), tai);
  EXPECT_EQ(classify_offset(37.025, &tai).kind, K::other);
  const OffsetClass other{};
  EXPECT_EQ(classify_offset(37.015, &other).kind, K::other);
}

TEST(NicClock, DescriptionsSayWhatTheClockLooksLike) {
  const std::string tai = describe_offset(37.000012, classify_offset(37.000012));
  EXPECT_NE(tai.find("the NIC clock looks like TAI: 37.000012 s ahead of CLOCK_REALTIME"),
            std::string::npos)
      << tai;
  EXPECT_NE(tai.find("TAI - UTC since 2017-01-01"), std::string::npos) << tai;
  const std::string stale = describe_offset(36.0, classify_offset(36.0));
  EXPECT_NE(stale.find("not today's 37"), std::string::npos) << stale;
  const std::string free = describe_offset(123.456, classify_offset(123.456));
  EXPECT_NE(free.find("123.456000 s ahead of CLOCK_REALTIME, not a whole number"),
            std::string::npos)
      << free;
  EXPECT_NE(describe_offset(0.0001, classify_offset(0.0001)).find("agrees with CLOCK_REALTIME"),
            std::string::npos);
}

TEST(NicClock, HandoffKeepsTheLeastDelayedOfTheRequestedSamples) {
  SampleHandoff h;
  uint64_t nic = 0;
  int64_t host = 0;
  EXPECT_FALSE(h.wanted());
  h.offer(1, 2, WallclockEncoding::ns);  // nothing asked: ignored
  EXPECT_FALSE(h.take(nic, host));
  h.request(3);
  EXPECT_TRUE(h.pending());
  EXPECT_TRUE(h.wanted());
  h.offer(1'000, 1'500, WallclockEncoding::ns);  // 500 ns late
  h.offer(2'000, 2'100, WallclockEncoding::ns);  // 100 ns late: the best
  EXPECT_FALSE(h.take(nic, host)) << "handed over before all three were offered";
  h.offer(3'000, 3'900, WallclockEncoding::ns);
  EXPECT_FALSE(h.wanted());
  ASSERT_TRUE(h.take(nic, host));
  EXPECT_EQ(nic, 2'000u);
  EXPECT_EQ(host, 2'100);
  EXPECT_FALSE(h.pending());
  EXPECT_FALSE(h.take(nic, host)) << "taken twice";
  // Real-time encoded values compare by their decoded time.
  h.request(2);
  h.offer(rt_encode(kT0 + kTai), kT0 + 900, WallclockEncoding::realtime);
  h.offer(rt_encode(kT0 + kTai + 999'999'000), kT0 + 999'999'100, WallclockEncoding::realtime);
  ASSERT_TRUE(h.take(nic, host));
  EXPECT_EQ(host, kT0 + 999'999'100);
}

TEST(NicClock, FitMapsADriftingTaiClockToUtc) {
  // A PHC on TAI whose oscillator runs 200 ppm fast; each sample pairs it with a host clock
  // read 2..12 us later (poll latency).
  auto phc = [](int64_t utc) {
    return static_cast<uint64_t>(utc + kTai + (utc - kT0) / 5000);  // 200 ppm
  };
  ClockFit fit = nic_ns_fit();
  int64_t last = 0;
  for (int64_t i = 0; i < 20; ++i) {
    last = kT0 + i * 1'000'000'000;
    fit.add(phc(last), last + 2'000 + (i * 7'919) % 10'000);
  }
  const ClockMap m = fit.map();
  const int64_t probe = last + 800'000'000;  // a completion 0.8 s after the last sample
  EXPECT_LT(std::llabs(m.to_ns(phc(probe)) - probe), 20'000);
  const double offset_s =
      static_cast<double>(m.base_ticks - static_cast<uint64_t>(m.base_ns)) / 1e9;
  EXPECT_NEAR(offset_s, 37.0038, 0.0001);  // 37 s + 19 s of 200 ppm
  // Real-time encoded values decode onto the same line.
  EXPECT_LT(
      std::llabs(m.to_ns(decode_wallclock(rt_encode(phc(probe)), WallclockEncoding::realtime)) -
                 probe),
      20'000);
}

// The switch from host time to the NIC's map can put the next stamps behind the last ones: held
// at the last stamp while the step back is shorter than a clock step, passed on beyond it.
TEST(NicClock, StampsHoldOverShortStepsBackAndFollowLongOnes) {
  StampFloor f;
  EXPECT_EQ(f.apply(1'000'000'000), 1'000'000'000);
  EXPECT_EQ(f.apply(1'000'000'500), 1'000'000'500);
  EXPECT_EQ(f.apply(999'700'000), 1'000'000'500);    // 300 us back: held
  EXPECT_EQ(f.apply(1'000'000'400), 1'000'000'500);  // still behind: held
  EXPECT_EQ(f.apply(1'000'000'600), 1'000'000'600);  // ahead again: followed
  const int64_t stepped = 1'000'000'600 - StampFloor::kClockStepNs;
  EXPECT_EQ(f.apply(stepped), stepped);            // a PHC step: passed on, not frozen
  EXPECT_EQ(f.apply(stepped + 10), stepped + 10);  // and followed from there
  EXPECT_EQ(f.apply(stepped + 10 - StampFloor::kClockStepNs / 2), stepped + 10);  // held
}

TEST(CqSize, Mlx5RoundsUpToAPowerOfTwoMinusOne) {
  EXPECT_EQ(mlx5_cq_entries(1), 1u);
  EXPECT_EQ(mlx5_cq_entries(2), 3u);
  EXPECT_EQ(mlx5_cq_entries(4096), 8191u);
  EXPECT_EQ(mlx5_cq_entries(4095), 4095u);
  EXPECT_EQ(mlx5_cq_entries(4194303), 4194303u);
  EXPECT_EQ(mlx5_cq_entries(4194304), 8388607u);
}

TEST(CqSize, FitsTheDeviceOnlyAfterRounding) {
  constexpr uint64_t kConnectX = 4194303;  // max_cqe = 2^22 - 1
  EXPECT_TRUE(cq_fits(4194303, kConnectX));
  EXPECT_FALSE(cq_fits(4194304, kConnectX)) << "needs 8388607 entries";
  EXPECT_TRUE(cq_fits(4095, 4095));
  EXPECT_FALSE(cq_fits(4096, 4095));
  EXPECT_FALSE(cq_fits(4096, 8000)) << "8191 entries > 8000 although 4096 < 8000";
  EXPECT_FALSE(cq_fits(0, kConnectX));
  EXPECT_FALSE(cq_fits(uint64_t{1} << 24, ~uint64_t{0})) << "libmlx5's own 2^24 bound";
}

}  // namespace
}  // namespace rocecap::capture::verbs
