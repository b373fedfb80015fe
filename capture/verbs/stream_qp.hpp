// VerbsSource's per-stream state: private to capture/verbs (verbs_source.cpp and
// qp_recovery.cpp), never included elsewhere.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "capture/verbs/verbs_source.hpp"

namespace rocecap::capture::verbs {

struct VerbsSource::StreamQp {
  // Declaration order is destruction order reversed: the flow goes first, then the QP, then
  // the memory it wrote into.
  MemoryRegion header_mr;
  MemoryRegion payload_mr;
  QueuePair qp;
  Flow flow;
  StreamPipeline* pipeline = nullptr;
  uint32_t header_bytes = 0;   // SGE0 length: the split point
  uint32_t payload_bytes = 0;  // SGE1 length: a longer frame completes with LOC_LEN_ERR
  // One receive WR and its two SGEs per ring slot, filled once at start-up: a slot's header
  // and payload addresses never change (a verbs ring takes no loans), so posting a slot only
  // links its WR into the batch. A slot is posted at most once until it completes, so its WR is
  // never in two batches (libibverbs' post_recv reads the WRs only during the call).
  std::vector<ibv_recv_wr> slot_wrs;
  std::vector<ibv_sge> slot_sges;
  std::array<SlotId, kPostBatch> ids{};
  std::string name;  // "group:port from source", for error context
  // Recovery (capture thread). outstanding = WRs posted and not yet completed: the QP may be
  // reset once it is 0, as every WR then came back (flushed) and no slot is lost.
  uint64_t outstanding = 0;
  bool recovering = false;
  bool err_requested = false;  // ibv_modify_qp to ERR done for this recovery
  int64_t recover_since_ns = 0;
  std::array<int64_t, kMaxRecoveries> recent_errors{};  // monotonic ns, a ring
  uint32_t error_count = 0;
};

}  // namespace rocecap::capture::verbs
