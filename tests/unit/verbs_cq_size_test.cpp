// mlx5's CQ rounding (capture/verbs/cq_size.hpp): which CQ sizes a device with a given max_cqe
// can make.
#include <gtest/gtest.h>

#include <cstdint>

#include "capture/verbs/cq_size.hpp"

namespace rocecap::capture::verbs {
namespace {

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
