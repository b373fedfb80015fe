// VtpState::note's inline step for the next number against the general rules it skips
// (note_general: advance() with a jump of one), over random number sequences: runs of next
// numbers, small and large jumps, late and repeated numbers, settles. Every counter must agree
// after every number.
#include "capture/vtp_state.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>

namespace rocecap::capture {
namespace {

void expect_same(const VtpState& fast, const VtpState& general, int step) {
  ASSERT_EQ(fast.skipped.get(), general.skipped.get()) << "after step " << step;
  ASSERT_EQ(fast.out_of_order.get(), general.out_of_order.get()) << "after step " << step;
  ASSERT_EQ(fast.pending(), general.pending()) << "after step " << step;
}

TEST(VtpState, TheNextNumberStepCountsWhatTheGeneralRulesCount) {
  VtpState fast, general;
  std::mt19937_64 rng(20261130);
  uint64_t psn = uint64_t{1} << 20;  // far above any late distance: never wraps
  uint64_t jumps = 0, lates = 0;
  for (int step = 0; step < 200000; ++step) {
    const unsigned kind = rng() % 100;
    uint64_t n = psn + 1;           // 90 %: the next number
    if (kind >= 90 && kind < 95) {  // a jump, now and then past the window
      n = psn + 2 + rng() % (kind == 94 ? 3 * VtpState::kWindow : 70);
      ++jumps;
    } else if (kind >= 95 && kind < 99) {  // late or repeated, within or past the window
      n = psn - rng() % (kind == 98 ? 2 * VtpState::kWindow : 40);
      ++lates;
    }
    if (kind == 99) {
      fast.settle();
      general.settle();
    } else {
      fast.note(n);
      general.note_general(n);
      if (n > psn) psn = n;
    }
    expect_same(fast, general, step);
  }
  EXPECT_GT(jumps, 5000u);
  EXPECT_GT(lates, 5000u);
  // The sequences exercised every count: numbers taken back, skipped, out of order.
  EXPECT_GT(fast.skipped.get(), 1000u);
  EXPECT_GT(fast.out_of_order.get(), 5000u);
}

// A number that comes next after a gap has left the window: its slot held a number never seen,
// which the step counts as skipped there and then, as advance() does.
TEST(VtpState, TheNextNumberCountsTheSlotItTakesOverWhenThatNumberWasNeverSeen) {
  VtpState s;
  s.note(10);
  s.note(12);  // 11 pending
  EXPECT_EQ(s.pending(), 1u);
  for (uint64_t n = 13; n <= 11 + VtpState::kWindow; ++n)
    s.note(n);  // the last one takes over 11's slot
  EXPECT_EQ(s.skipped.get(), 1u);
  EXPECT_EQ(s.pending(), 0u);
  EXPECT_EQ(s.out_of_order.get(), 0u);
  s.note(11);  // too late to take back
  EXPECT_EQ(s.out_of_order.get(), 1u);
  EXPECT_EQ(s.skipped.get(), 1u);
}

}  // namespace
}  // namespace rocecap::capture
