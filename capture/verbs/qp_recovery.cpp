// Completion-error recovery of one stream's receive QP (VerbsSource members): count, flush,
// RESET -> INIT -> RTR, re-post; bounded, and the first error kept for the log.
#include <cstdio>

#include "capture/verbs/qp_state.hpp"
#include "capture/verbs/stream_qp.hpp"
#include "capture/verbs/verbs_source.hpp"

namespace rocecap::capture::verbs {

// Rare path (capture thread): one clock read, at most one snprintf, no allocation.
// IBV_WC_LOC_LEN_ERR (reason `oversize`) is counted apart from the other errors but recovered
// the same way and within the same bound: with capture.max_frame checked against the MTU at
// start it cannot happen unless the MTU grew during the run, and then every long frame costs a
// recovery and the frames arriving meanwhile; failing with the reason beats capturing almost
// nothing while looking alive.
void VerbsSource::on_qp_error(uint32_t index, SlotId slot, ibv_wc_status status,
                              uint32_t vendor_err) noexcept {
  StreamQp& s = streams_[index];
  const bool oversize = status == IBV_WC_LOC_LEN_ERR;
  (oversize ? oversize_ : wc_errors_).add();
  if (s.recovering) return;  // a second error of a QP already on its way back: counted only
  const int64_t now = monotonic_ns();
  // From here the QP's flushed WRs are expected, also when this error fails the source.
  s.recovering = true;
  s.err_requested = false;
  s.recover_since_ns = now;
  ++recovering_;
  const uint32_t slot_bytes = s.header_bytes + s.payload_bytes;
  char cause[112];
  if (oversize) {
    std::snprintf(cause, sizeof cause,
                  "oversize frame (local length error: longer than the %u-byte slot, "
                  "capture.max_frame)",
                  slot_bytes);
  } else {
    std::snprintf(cause, sizeof cause, "completion error %s", ibv_wc_status_str(status));
  }
  // The oldest of the last kMaxRecoveries errors: within the window, this is one too many.
  const int64_t oldest = s.recent_errors[s.error_count % kMaxRecoveries];
  char what[256];
  if (s.error_count >= kMaxRecoveries && now - oldest < kRecoveryWindowNs) {
    std::snprintf(what, sizeof what,
                  "stream %s: %s (vendor_err 0x%x) on the QP again: %u errors within %lld s (at "
                  "most %u recoveries)",
                  s.name.c_str(), cause, vendor_err, kMaxRecoveries + 1,
                  static_cast<long long>(kRecoveryWindowNs / 1'000'000'000), kMaxRecoveries);
    return fail(what, 0);
  }
  s.recent_errors[s.error_count % kMaxRecoveries] = now;
  ++s.error_count;
  int expected = 0;
  if (!first_error_state_.compare_exchange_strong(expected, 1)) return;
  std::snprintf(first_error_.data(), first_error_.size(),
                "RDMA device %s (%s), stream %s: receive %s (vendor_err 0x%x, qp %u, slot %u); "
                "the QP is reset and its receive WRs posted again; frames that arrive meanwhile "
                "are counted lost; later errors are only counted",
                device_.c_str(), interface_.c_str(), s.name.c_str(), cause, vendor_err,
                s.qp->qp_num, slot);
  first_error_state_.store(2, std::memory_order_release);
}

// After each poll while a QP recovers: ERR (so every posted WR is flushed, whatever state the
// error left the QP in), then once every WR came back, RESET -> INIT -> RTR. The flow rule
// stays: it is attached to the QP, not to its state.
void VerbsSource::advance_recoveries() noexcept {
  for (uint32_t i = 0; i < streams_.size() && !failed(); ++i) {
    StreamQp& s = streams_[i];
    if (!s.recovering) continue;
    if (s.outstanding == 0) {
      finish_recovery(i);
      continue;
    }
    if (!s.err_requested) {
      s.err_requested = true;
      if (const int rc = set_state(s.qp.get(), IBV_QPS_ERR, port_); rc != 0) {
        char what[160];
        std::snprintf(what, sizeof what, "stream %s: QP recovery: ibv_modify_qp to ERR",
                      s.name.c_str());
        return fail(what, rc);
      }
    }
    if (monotonic_ns() - s.recover_since_ns > kFlushTimeoutNs) {
      char what[200];
      std::snprintf(what, sizeof what,
                    "stream %s: QP recovery: %llu receive WRs not flushed within %lld s of the "
                    "completion error",
                    s.name.c_str(), static_cast<unsigned long long>(s.outstanding),
                    static_cast<long long>(kFlushTimeoutNs / 1'000'000'000));
      return fail(what, 0);
    }
  }
}

// RESET -> INIT, post every free slot, -> RTR: the same order as at start (build_stream), as
// libmlx5 refuses WRs in RESET and arms those posted in INIT at RTR.
void VerbsSource::finish_recovery(uint32_t index) noexcept {
  StreamQp& s = streams_[index];
  for (const ibv_qp_state to : {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR}) {
    if (to == IBV_QPS_RTR) {
      s.recovering = false;  // repost() skips a recovering QP
      --recovering_;
      if (!repost(index)) return;  // failed, with the reason
    }
    if (const int rc = set_state(s.qp.get(), to, port_); rc != 0) {
      char what[160];
      std::snprintf(what, sizeof what, "stream %s: QP recovery: ibv_modify_qp to %s",
                    s.name.c_str(), state_name(to));
      return fail(what, rc);
    }
  }
  recoveries_[index].add();
  qp_recoveries_.add();
}

std::string VerbsSource::first_error() const {
  return first_error_state_.load(std::memory_order_acquire) >= 2 ? first_error_.data() : "";
}

std::string VerbsSource::take_first_error() {
  int expected = 2;
  if (!first_error_state_.compare_exchange_strong(expected, 3, std::memory_order_acq_rel)) {
    return "";
  }
  return first_error_.data();
}

}  // namespace rocecap::capture::verbs
