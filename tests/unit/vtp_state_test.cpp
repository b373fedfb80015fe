// VtpState::note's inline step for the next number against the general rules it skips
// (note_general), and both against a plain model of the rules (doc/vdif.md: a number jumped
// over is pending until it arrives, the flow settles, or it falls kWindow behind the highest),
// over random number sequences: runs of next numbers, small and large jumps, late and repeated
// numbers, settles. Every counter must agree after every number.
#include "capture/vtp_state.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>

namespace rocecap::capture {
namespace {

// The rules, kept as a set of pending numbers: no bits, no slots, no shortcuts.
struct Model {
  static constexpr uint64_t kWindow = VtpState::kWindow;
  bool started = false;
  uint64_t highest = 0, skipped = 0, out_of_order = 0;
  std::set<uint64_t> pending;

  void note(uint64_t psn) {
    if (!started) {
      started = true;
      highest = psn;
    } else if (psn > highest) {
      const uint64_t window_start = psn - kWindow + 1;  // after the jump
      for (uint64_t n = highest + 1; n < psn; ++n) {
        if (n >= window_start) {
          pending.insert(n);
        } else {
          ++skipped;  // never enters the window
        }
      }
      highest = psn;
      while (!pending.empty() && *pending.begin() < window_start) {
        pending.erase(pending.begin());
        ++skipped;
      }
    } else {
      ++out_of_order;
      pending.erase(psn);  // taken back if pending; a number out of the window is not
    }
  }
  void settle() {
    skipped += pending.size();
    pending.clear();
  }
};

void expect_same(const VtpState& fast, const VtpState& general, int step) {
  ASSERT_EQ(fast.skipped.get(), general.skipped.get()) << "after step " << step;
  ASSERT_EQ(fast.out_of_order.get(), general.out_of_order.get()) << "after step " << step;
  ASSERT_EQ(fast.pending(), general.pending()) << "after step " << step;
}

void expect_model(const VtpState& s, const Model& m, int step) {
  ASSERT_EQ(s.skipped.get(), m.skipped) << "after step " << step;
  ASSERT_EQ(s.out_of_order.get(), m.out_of_order) << "after step " << step;
  ASSERT_EQ(s.pending(), m.pending.size()) << "after step " << step;
}

TEST(VtpState, TheNextNumberStepCountsWhatTheGeneralRulesCount) {
  VtpState fast, general;
  Model model;
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
      model.settle();
    } else {
      fast.note(n);
      general.note_general(n);
      model.note(n);
      if (n > psn) psn = n;
    }
    expect_same(fast, general, step);
    expect_model(fast, model, step);
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

// Two numbers pending far apart: each is counted skipped when its own slot is taken over, the
// later one only after the step has run past the first (the step's bound moves on to it).
TEST(VtpState, EachPendingNumberLeavesTheWindowAtItsOwnTurn) {
  VtpState s;
  s.note(10);
  s.note(12);  // 11 pending
  for (uint64_t n = 13; n < 2000; ++n)
    s.note(n);
  s.note(2001);  // 2000 pending
  EXPECT_EQ(s.pending(), 2u);
  for (uint64_t n = 2002; n <= 11 + VtpState::kWindow; ++n)
    s.note(n);
  EXPECT_EQ(s.skipped.get(), 1u) << "11's slot taken over";
  EXPECT_EQ(s.pending(), 1u);
  for (uint64_t n = 12 + VtpState::kWindow; n < 2000 + VtpState::kWindow; ++n)
    s.note(n);
  EXPECT_EQ(s.skipped.get(), 1u) << "2000 is still within the window";
  s.note(2000);  // late, taken back
  EXPECT_EQ(s.out_of_order.get(), 1u);
  EXPECT_EQ(s.pending(), 0u);
  for (uint64_t n = 2000 + VtpState::kWindow; n < 3 * VtpState::kWindow; ++n)
    s.note(n);
  EXPECT_EQ(s.skipped.get(), 1u);
  EXPECT_EQ(s.pending(), 0u);
}

// A run of numbers whose oldest pending one is taken back: the next oldest is the one that
// leaves next, not the one taken back.
TEST(VtpState, TakingBackTheOldestPendingNumberMovesTheBoundToTheNext) {
  VtpState s;
  s.note(100);
  s.note(103);  // 101, 102 pending
  s.note(101);
  EXPECT_EQ(s.pending(), 1u);
  for (uint64_t n = 104; n < 101 + VtpState::kWindow + 2; ++n)
    s.note(n);  // 102's slot too
  EXPECT_EQ(s.skipped.get(), 1u) << "102 only";
  EXPECT_EQ(s.pending(), 0u);
}

// Numbers at the top of the 64-bit range, from a sender that starts there or a hostile one:
// the highest may be 2^64 - 1, after which every number is late (the counters never wrap).
TEST(VtpState, NumbersAtTheTopOfTheRangeAreCountedAsTheModelCountsThem) {
  constexpr uint64_t kMax = ~uint64_t{0};
  VtpState fast, general;
  Model model;
  const uint64_t numbers[] = {kMax - 5000, kMax - 3, kMax - 2, kMax, kMax - 1, kMax,
                              0,           5,        kMax - 3, kMax, 1,        kMax - 4};
  int step = 0;
  for (const uint64_t n : numbers) {
    fast.note(n);
    general.note_general(n);
    model.note(n);
    expect_same(fast, general, step);
    expect_model(fast, model, step);
    ++step;
  }
  EXPECT_EQ(fast.pending(), VtpState::kWindow - 5) << "the window below 2^64 but five numbers";
  EXPECT_EQ(fast.out_of_order.get(), 8u) << "every number after 2^64 - 1 is late";
  fast.settle();
  model.settle();
  expect_model(fast, model, step);
  EXPECT_LT(fast.skipped.get(), 10000u);
}

}  // namespace
}  // namespace rocecap::capture
