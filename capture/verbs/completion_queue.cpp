// VerbsSource's shared CQ: its size against the device's limit, how it is created (single-
// threaded, raw completion timestamps), the timestamps of its completions, and the async event
// that reports its overrun.
#include <cerrno>
#include <cstdio>

#include "capture/verbs/cq_size.hpp"
#include "capture/verbs/qp_state.hpp"
#include "capture/verbs/verbs_source.hpp"

namespace rocecap::capture::verbs {

// Refused here, with both numbers, rather than by ibv_create_cq_ex's bare EINVAL.
void VerbsSource::check_cq_size(uint64_t entries, uint64_t depth_sum, uint64_t max_cqe) const {
  if (cq_fits(entries, max_cqe)) return;
  throw VerbsError(
      "RDMA device " + device_ + ": a CQ of " + std::to_string(entries) +
          " entries (capture.cq_size; the receive queues need " + std::to_string(depth_sum) +
          ") needs " + std::to_string(mlx5_cq_entries(entries)) + " (libmlx5 rounds " +
          std::to_string(entries) + " + 1 up to a power of two), more than the device's max_cqe " +
          std::to_string(max_cqe) +
          ": lower capture.ring_depth or spread the groups over more devices",
      0);
}

// The shared CQ is polled by the capture thread alone (VerbsSource::poll), so it is created
// single-threaded: libmlx5 then polls it without its CQ lock (providers/mlx5/verbs.c
// create_cq sets MLX5_CQ_FLAGS_SINGLE_THREADED, and cq.c mlx5_cq_fill_pfns picks the
// SINGLE_THREADED poll functions, mlx5_start_poll with lock = 0). A provider that refuses the
// flag gets the CQ without it.
CompletionQueue VerbsSource::make_cq(uint32_t entries, uint64_t wc_flags) const {
  ibv_cq_init_attr_ex a{};
  a.cqe = entries;
  a.channel = channel_.get();
  a.wc_flags = wc_flags;
  a.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
  a.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
  CompletionQueue cq(ibv_create_cq_ex(ctx_.get(), &a));
  if (!cq && (errno == EINVAL || errno == EOPNOTSUPP)) {
    a.comp_mask = 0;
    a.flags = 0;
    cq.reset(ibv_create_cq_ex(ctx_.get(), &a));
  }
  return cq;
}

// The raw-clock fit, from its first sample: false when ibv_query_rt_values_ex cannot read the
// HCA clock (then raw ticks could not be converted).
bool VerbsSource::start_raw_clock(const ibv_device_attr_ex& dev) {
  fit_.emplace(dev.hca_core_clock, dev.completion_timestamp_mask);
  for (int i = 0; i < 20 && fit_->samples() == 0; ++i)  // a busy host may spoil a few
    refresh_clock();
  if (fit_->samples() != 0) return true;
  fit_.reset();
  return false;
}

// Completion timestamps are raw HCA ticks (IBV_WC_EX_WITH_COMPLETION_TIMESTAMP), converted here
// with the fit; never IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK. With WALLCLOCK libmlx5
// polls through its CLOCK_UPDATE functions (cq.c mlx5_cq_fill_pfns): every ibv_start_poll that
// finds a completion re-reads the kernel's clock-info page (mlx5dv_get_clock_info), and gives
// up with EBUSY after 10 reads that race the kernel's update of it (mlx5.c
// _mlx5dv_get_clock_info). In rdma-core 44 (Debian 12) mlx5_start_poll reads the clock after
// it has consumed the CQE and returns EBUSY without releasing the CQ lock: the completion (and
// its receive WR) is lost, and a locked CQ hangs the next poll and ibv_destroy_qp. rdma-core
// v53 (e677dc664, backported to v44.7 .. v52.1) releases the lock; only the fix after v64
// (0819419e7) keeps the completion. The raw ticks need no clock-info page at all.
void VerbsSource::create_cq(uint32_t entries, const ibv_device_attr_ex& dev) {
  if (dev.completion_timestamp_mask != 0 && dev.hca_core_clock != 0 && start_raw_clock(dev)) {
    cq_ = make_cq(entries, IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP);
    if (cq_) time_source_ = TimeSource::nic_raw_clock;
  }
  if (!cq_) cq_ = make_cq(entries, IBV_WC_EX_WITH_BYTE_LEN);
  if (!cq_) {
    throw VerbsError("RDMA device " + device_ + ": ibv_create_cq_ex with " +
                         std::to_string(entries) + " entries",
                     errno);
  }
  raw_clock_ = time_source_ == TimeSource::nic_raw_clock;
  hw_timestamps_ = raw_clock_;
  cq_entries_ = static_cast<uint32_t>(ibv_cq_ex_to_cq(cq_.get())->cqe);
}

// The shared CQ again, of the same size, without timestamps (a device that refused raw ones for
// its receive queues: build_stream), and software time from here on. The raw clock's fit stops.
void VerbsSource::software_time_instead() {
  cq_.reset();  // no QP uses it yet
  cq_ = make_cq(cq_entries_, IBV_WC_EX_WITH_BYTE_LEN);
  if (!cq_) {
    throw VerbsError("RDMA device " + device_ + ": ibv_create_cq_ex with " +
                         std::to_string(cq_entries_) + " entries (without timestamps)",
                     errno);
  }
  time_source_ = TimeSource::software;
  raw_clock_ = hw_timestamps_ = false;
  fit_.reset();
  if (on_event_) {
    on_event_("RDMA device " + device_ + " (" + interface_ +
                  "): its receive queues refuse raw completion timestamps (ibv_create_qp: "
                  "EOPNOTSUPP; a NIC whose receive queues take real-time timestamps only): "
                  "software receive time instead",
              false);
  }
}

// Called once per polled batch, right after ibv_start_poll found its first completion: one
// host clock read (software time), or one sequence-lock read of the published raw-clock fit, so
// that each completion costs only its multiply (the lock read per completion was about 20 of
// the 62 instructions a completion's time took, BENCHMARKS.md "Capture cost"). A fit published
// during the batch applies from the next batch (a batch is at most 256 completions: microseconds
// of a map that is slewed, never stepped).
VerbsSource::BatchTime VerbsSource::batch_time() noexcept {
  if (time_source_ == TimeSource::software) return {false, wall_ns(), {}};
  return {true, 0, clock_.load()};
}

void VerbsSource::on_fatal_event(ibv_event_type type) noexcept {
  if (type != IBV_EVENT_CQ_ERR) return fail(ibv_event_type_str(type), 0);
  // libmlx5 polls by CQE ownership alone (providers/mlx5/cq.c, get_sw_cqe) and cannot see an
  // overrun: the device reports it as a CQ error event (the kernel's IB_EVENT_CQ_ERR) and
  // writes no more completions to that CQ, so the capture cannot go on.
  char what[200];
  std::snprintf(what, sizeof what,
                "async event IBV_EVENT_CQ_ERR: the completion queue (%u entries) overran or "
                "failed and reports no more completions",
                cq_entries_);
  fail(what, 0);
}

}  // namespace rocecap::capture::verbs
