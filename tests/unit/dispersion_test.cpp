// Dispersion-aware windows (daemon/lib/dumps/dispersion.hpp): the delay is the cold-plasma
// formula (values worked out here from 4.148808 ms x DM x (f^-2 - ref^-2)), each stream's window
// is [start + delay(high), end + delay(low)) with the start rounded down and the end up, and a
// shift that leaves int64 nanoseconds is refused instead of wrapping.
#include "daemon/lib/dumps/dispersion.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace rocecap::daemon {
namespace {

TEST(Dispersion, DelayIsTheColdPlasmaFormula) {
  // 1 GHz against a reference of 1000 GHz (whose own term is 1e-6): the constant x DM.
  EXPECT_NEAR(static_cast<double>(dispersion_delay_s(1000, 1000, 1e6 - 1)), 4.148808 * (1 - 1e-6),
              1e-9);
  // DM 500 from 1456 down to 1200 MHz: 4.148808e-3 x 500 x (1/1.44 - 1/2.119936) s.
  const double want = 4.148808e-3 * 500 * (1 / (1.2 * 1.2) - 1 / (1.456 * 1.456));
  EXPECT_NEAR(static_cast<double>(dispersion_delay_s(500, 1200, 1456)), want, 1e-12);
  EXPECT_NEAR(want, 0.462036, 1e-6);
  // Above the reference the delay is negative; at it, zero; DM 0: zero everywhere.
  EXPECT_LT(dispersion_delay_s(500, 1500, 1456), 0);
  EXPECT_EQ(dispersion_delay_s(500, 1456, 1456), 0);
  EXPECT_EQ(dispersion_delay_s(0, 1200, 1456), 0);
}

TEST(Dispersion, AStreamsWindowRunsFromItsTopDelayToItsBottomDelayRoundedOutwards) {
  const config::FrequencyRange band{1200, 1264};
  const int64_t start = 1'000'000'000, end = 1'010'000'000;
  const auto w = sweep_window(start, end, 2000, 1456, band);
  ASSERT_TRUE(w);
  const long double hi = 4.148808e-3L * 2000 * (1 / (1.264L * 1.264L) - 1 / (1.456L * 1.456L));
  const long double lo = 4.148808e-3L * 2000 * (1 / (1.2L * 1.2L) - 1 / (1.456L * 1.456L));
  EXPECT_EQ(w->start_ns, start + static_cast<int64_t>(std::floor(hi * 1e9L)));
  EXPECT_EQ(w->end_ns, end + static_cast<int64_t>(std::ceil(lo * 1e9L)));
  EXPECT_GT(w->end_ns - w->start_ns, end - start);  // the sweep across the band widens it
  EXPECT_NEAR(static_cast<double>(w->start_delay_s), static_cast<double>(hi), 1e-12);
  // DM 0 leaves the window as it is.
  const auto flat = sweep_window(start, end, 0, 1456, band);
  ASSERT_TRUE(flat);
  EXPECT_EQ(flat->start_ns, start);
  EXPECT_EQ(flat->end_ns, end);
}

TEST(Dispersion, AShiftBeyondInt64NanosecondsIsRefused) {
  const int64_t late = std::numeric_limits<int64_t>::max() - 1'000'000'000;
  EXPECT_FALSE(sweep_window(late, late + 10, 1000, 1400, {100, 200}));
  EXPECT_TRUE(sweep_window(0, 10, 1000, 1400, {100, 200}));
}

}  // namespace
}  // namespace rocecap::daemon
