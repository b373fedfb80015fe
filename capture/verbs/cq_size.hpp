// How many entries an mlx5 CQ really gets, and whether the device can make it. Pure
// arithmetic: unit-tested in tests/unit/verbs_cq_size_test.cpp.
//
// libmlx5 (rdma-core providers/mlx5/verbs.c, create_cq) asks the kernel for
// ncqe = align_queue_size(cqe + 1), the next power of two, and refuses ncqe > 1 << 24 itself;
// the kernel (drivers/infiniband/hw/mlx5/cq.c, mlx5_ib_create_cq) refuses
// roundup_pow_of_two(entries + 1) > 1 << log_max_cq_sz, and reports
// max_cqe = (1 << log_max_cq_sz) - 1 (main.c, mlx5_ib_query_device). So a request for n
// entries needs roundup_pow2(n + 1) - 1 <= max_cqe: 4194303 is the largest n a ConnectX with
// log_max_cq_sz 22 takes, and 4194304 already needs 8388607.
#pragma once

#include <cstdint>

namespace rocecap::capture::verbs {

inline constexpr uint64_t kMlx5MaxCqEntries = (uint64_t{1} << 24) - 1;  // libmlx5's own bound

// The entries a CQ created for `n` holds: 2^k - 1 >= n.
constexpr uint64_t mlx5_cq_entries(uint64_t n) noexcept {
  uint64_t p = 1;
  while (p < n + 1)
    p <<= 1;
  return p - 1;
}

constexpr bool cq_fits(uint64_t n, uint64_t max_cqe) noexcept {
  const uint64_t e = mlx5_cq_entries(n);
  return n >= 1 && e <= max_cqe && e <= kMlx5MaxCqEntries;
}

}  // namespace rocecap::capture::verbs
