// VerbsSource's shared CQ: its size against the device's limit, the completion timestamps it
// asks for, and the async event that reports its overrun.
#include <cerrno>
#include <cstdio>

#include "capture/verbs/cq_size.hpp"
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

void VerbsSource::create_cq(uint32_t entries, const ibv_device_attr_ex& dev) {
  ibv_cq_init_attr_ex a{};
  a.cqe = entries;
  a.channel = channel_.get();
  a.wc_flags = IBV_WC_EX_WITH_BYTE_LEN;
  const bool have_clock = dev.completion_timestamp_mask != 0;
  if (have_clock) {
    // WALLCLOCK alone: libmlx5 converts the CQE's cycles with the kernel's clock-info page, or
    // in real-time clock mode hands over the raw seconds<<32|ns field (providers/mlx5/cq.c,
    // mlx5_cq_fill_pfns; asking for COMPLETION_TIMESTAMP as well would disable the latter).
    // Either way it is the NIC's PHC (TAI under ptp4l), mapped to UTC here (nic_clock.hpp).
    a.wc_flags |= IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;
    cq_.reset(ibv_create_cq_ex(ctx_.get(), &a));
    if (cq_) {
      time_source_ = TimeSource::nic_wallclock;
      fit_.emplace(nic_ns_fit());
    }
  }
  if (!cq_ && have_clock && dev.hca_core_clock != 0) {
    // No clock-info page (an old kernel) and no real-time clock: libmlx5 refuses WALLCLOCK
    // with EOPNOTSUPP. Raw ticks, converted here.
    fit_.emplace(dev.hca_core_clock, dev.completion_timestamp_mask);
    for (int i = 0; i < 20 && fit_->samples() == 0; ++i)  // a busy host may spoil a few
      refresh_clock();
    if (fit_->samples() != 0) {  // ibv_query_rt_values_ex works: the clock can be fitted
      a.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
      cq_.reset(ibv_create_cq_ex(ctx_.get(), &a));
    }
    raw_clock_ = static_cast<bool>(cq_);
    if (cq_) time_source_ = TimeSource::nic_raw_clock;
  }
  if (!cq_) {
    a.wc_flags = IBV_WC_EX_WITH_BYTE_LEN;
    cq_.reset(ibv_create_cq_ex(ctx_.get(), &a));
  }
  if (!cq_) {
    throw VerbsError("RDMA device " + device_ + ": ibv_create_cq_ex with " +
                         std::to_string(entries) + " entries",
                     errno);
  }
  hw_timestamps_ = time_source_ != TimeSource::software;
  cq_entries_ = static_cast<uint32_t>(ibv_cq_ex_to_cq(cq_.get())->cqe);
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
