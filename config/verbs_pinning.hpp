// What the verbs backend pins besides its rings, for the memlock pre-check (check_host.cpp).
// libmlx5 allocates each CQ's and each QP's queue buffer in the process and the kernel pins it
// with ib_umem_get, which counts it against RLIMIT_MEMLOCK unless the process has CAP_IPC_LOCK
// (drivers/infiniband/core/umem.c ib_umem_get: pinned_vm > RLIMIT_MEMLOCK -> ENOMEM), exactly
// like the ring slabs ibv_reg_mr registers; the doorbell records too (one pinned page per page
// of records: drivers/infiniband/hw/mlx5/doorbell.c mlx5_ib_db_map_user). Pure arithmetic.
#pragma once

#include <cstdint>

namespace rocecap::config {

inline constexpr uint64_t kPinPageBytes = 4096;
// libmlx5's CQE (providers/mlx5/verbs.c get_cqe_size: 64 unless MLX5_CQE_SIZE says 128).
inline constexpr uint64_t kMlx5CqeBytes = 64;
// A receive WQE of rocecap's QPs: 2 scatter entries (header slot, payload slot) of 16 bytes
// (struct mlx5_wqe_data_seg), rounded up to a power of two (verbs.c mlx5_calc_rcv_wqe).
inline constexpr uint64_t kMlx5RecvWqeBytes = 32;
// Doorbell records per pinned page: a page of cache-line-sized records (dbrec.c __add_page).
inline constexpr uint64_t kMlx5DoorbellsPerPage = kPinPageBytes / 64;

constexpr uint64_t round_up_pow2(uint64_t n) noexcept {
  uint64_t p = 1;
  while (p < n)
    p <<= 1;
  return p;
}

constexpr uint64_t round_up_pages(uint64_t bytes) noexcept {
  return (bytes + kPinPageBytes - 1) / kPinPageBytes * kPinPageBytes;
}

// A CQ asked for `entries`: libmlx5 allocates align_queue_size(entries + 1) CQEs (verbs.c
// create_cq), page-aligned (cq.c mlx5_alloc_cq_buf). The CQ alone reaches 256 MiB at 2^22.
constexpr uint64_t mlx5_cq_buffer_bytes(uint64_t entries) noexcept {
  return round_up_pages(round_up_pow2(entries + 1) * kMlx5CqeBytes);
}

// A raw packet QP with `depth` receive WRs and no send queue: roundup_pow2(depth) WQEs, at
// least one 64-byte block (verbs.c mlx5_calc_rq_size), page-aligned (mlx5_alloc_qp_buf).
constexpr uint64_t mlx5_rq_buffer_bytes(uint64_t depth) noexcept {
  const uint64_t wq = round_up_pow2(depth) * kMlx5RecvWqeBytes;
  return round_up_pages(wq < 64 ? 64 : wq);
}

// One interface: its CQ of `cq_entries`, `streams` receive queues of `depth`, and the pages of
// their doorbell records (one per CQ and QP).
constexpr uint64_t mlx5_interface_pinned_bytes(uint64_t cq_entries, uint64_t streams,
                                               uint64_t depth) noexcept {
  const uint64_t records = streams + 1;
  const uint64_t doorbell_pages = (records + kMlx5DoorbellsPerPage - 1) / kMlx5DoorbellsPerPage;
  return mlx5_cq_buffer_bytes(cq_entries) + streams * mlx5_rq_buffer_bytes(depth) +
         doorbell_pages * kPinPageBytes;
}

}  // namespace rocecap::config
