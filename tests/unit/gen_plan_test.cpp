#include "tools/lib/gen_plan.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace rocecap::tools {
namespace {

std::vector<Fate> walk(const ImpairmentPlan& plan, uint32_t stream, bool foreign) {
  FateWalker w(plan, stream, foreign);
  std::vector<Fate> out;
  for (uint64_t p = 0; p < plan.frames_per_stream(); ++p)
    out.push_back(w.next());
  return out;
}

ImpairmentRates busy_rates() {
  ImpairmentRates r;
  r.drop = 0.05;
  r.swap = 0.05;
  r.duplicate = 0.05;
  r.bad_sync = 0.05;
  r.truncate = 0.05;
  r.invalid = 0.05;
  r.foreign = 0.05;
  return r;
}

TEST(GenPlan, SameSeedSameFatesOtherSeedOtherFates) {
  const ImpairmentPlan a(42, busy_rates(), 5000), b(42, busy_rates(), 5000),
      c(43, busy_rates(), 5000);
  EXPECT_EQ(walk(a, 3, true), walk(b, 3, true));
  EXPECT_NE(walk(a, 3, true), walk(c, 3, true));
  EXPECT_NE(walk(a, 3, true), walk(a, 4, true));  // streams draw independently
}

TEST(GenPlan, SwapsAreDisjointFromEverythingAndNeverLast) {
  ImpairmentRates r = busy_rates();
  r.swap = 0.3;
  r.drop_every = 5;
  const ImpairmentPlan plan(9, r, 4000);
  const auto fates = walk(plan, 0, true);
  int swaps = 0;
  for (std::size_t p = 0; p < fates.size(); ++p) {
    if (fates[p] != Fate::swapped) continue;
    ++swaps;
    ASSERT_LT(p + 1, fates.size()) << "the last frame cannot start a swap";
    EXPECT_EQ(fates[p + 1], Fate::plain) << "swap partner at " << p + 1 << " has another fate";
    EXPECT_FALSE(plan.forced_drop(p + 1));
    if (p > 0) {
      EXPECT_NE(fates[p - 1], Fate::swapped) << "overlapping swaps at " << p;
    }
  }
  EXPECT_GT(swaps, 300);
}

TEST(GenPlan, DropEveryIsExact) {
  ImpairmentRates r;
  r.drop_every = 7;
  const ImpairmentPlan plan(1, r, 1000);
  const auto fates = walk(plan, 2, false);
  std::vector<std::size_t> dropped;
  for (std::size_t p = 0; p < fates.size(); ++p) {
    if (fates[p] == Fate::dropped) {
      dropped.push_back(p);
    } else {
      EXPECT_EQ(fates[p], Fate::plain);
    }
  }
  ASSERT_EQ(dropped.size(), 1000u / 7);
  for (std::size_t i = 0; i < dropped.size(); ++i)
    EXPECT_EQ(dropped[i], 7 * i + 6);
}

TEST(GenPlan, DropEveryHoldsAlongsideRandomImpairments) {
  ImpairmentRates r = busy_rates();
  r.drop_every = 10;
  const ImpairmentPlan plan(5, r, 2000);
  const auto fates = walk(plan, 1, true);
  for (std::size_t p = 9; p < fates.size(); p += 10)
    EXPECT_EQ(fates[p], Fate::dropped) << p;
}

TEST(GenPlan, RatesAreHonouredOnAverage) {
  ImpairmentRates r;
  r.drop = 0.1;
  r.invalid = 0.2;
  const ImpairmentPlan plan(77, r, 100000);
  const auto fates = walk(plan, 0, false);
  std::size_t drops = 0, invalid = 0;
  for (Fate f : fates) {
    drops += f == Fate::dropped;
    invalid += f == Fate::invalid;
  }
  EXPECT_NEAR(static_cast<double>(drops) / 1e5, 0.1, 0.01);
  EXPECT_NEAR(static_cast<double>(invalid) / 1e5, 0.2, 0.01);
}

TEST(GenPlan, ForeignOnlyWhereAllowed) {
  ImpairmentRates r;
  r.foreign = 0.5;
  const ImpairmentPlan plan(3, r, 1000);
  for (Fate f : walk(plan, 1, false))
    EXPECT_EQ(f, Fate::plain);
  std::size_t n = 0;
  for (Fate f : walk(plan, 0, true))
    n += f == Fate::foreign;
  EXPECT_GT(n, 400u);
}

TEST(GenPlan, CheckNamesTheOption) {
  ImpairmentRates r;
  EXPECT_EQ(r.check(), "");
  r.swap = -0.1;
  EXPECT_NE(r.check().find("--swap"), std::string::npos) << r.check();
  r.swap = 0.6;
  r.drop = 0.6;
  EXPECT_NE(r.check().find("more than 1"), std::string::npos) << r.check();
}

}  // namespace
}  // namespace rocecap::tools
