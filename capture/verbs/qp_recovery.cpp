// Recovery of one stream's receive QP after a completion error or a QP error event
// (VerbsSource members): count, flush, RESET -> INIT -> RTR, re-post; bounded, and the first
// error kept for the log.
#include <cerrno>
#include <cstdio>

#include "capture/verbs/qp_state.hpp"
#include "capture/verbs/stream_qp.hpp"
#include "capture/verbs/verbs_source.hpp"

namespace rocecap::capture::verbs {

// Rare path (capture thread): one clock read, a few snprintf, no allocation.
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
  char cause[112];
  if (oversize) {
    std::snprintf(cause, sizeof cause,
                  "oversize frame (local length error: longer than the %u-byte slot, "
                  "capture.max_frame)",
                  s.header_bytes + s.payload_bytes);
  } else {
    std::snprintf(cause, sizeof cause, "completion error %s", ibv_wc_status_str(status));
  }
  char tag[24];
  std::snprintf(tag, sizeof tag, "vendor_err 0x%x", vendor_err);
  char where[64];
  std::snprintf(where, sizeof where, "%s, qp %u, slot %u", tag, s.qp->qp_num, slot);
  start_recovery(index, cause, tag, where);
}

// A QP error event (IBV_EVENT_QP_FATAL, as the kernel reports a work queue catastrophic error
// of a raw packet QP's receive queue; see on_async_qp_event) on a QP in error: recovered like a
// completion error, within the same bound. The event and the QP's flushed WRs race: when the
// flushes were polled first they started the recovery (a WR flushed on a QP that is not
// recovering is an error of its own), which may even be over when the event is taken; then
// the QP is recovering, or no longer in error, and the event adds only the async thread's log
// line.
void VerbsSource::on_qp_event(uint32_t index, ibv_event_type type) noexcept {
  StreamQp& s = streams_[index];
  if (s.recovering) return;
  ibv_qp_state state = IBV_QPS_ERR;
  if (query_state(s.qp.get(), state) == 0 && state != IBV_QPS_ERR) return;
  char tag[48];
  std::snprintf(tag, sizeof tag, "async event %s", qp_event_name(type));
  char where[72];
  std::snprintf(where, sizeof where, "%s, qp %u", tag, s.qp->qp_num);
  start_recovery(index, "queue failure", tag, where);
}

void VerbsSource::start_recovery(uint32_t index, const char* cause, const char* tag,
                                 const char* where) noexcept {
  StreamQp& s = streams_[index];
  const int64_t now = monotonic_ns();
  // From here the QP's flushed WRs are expected, also when this error fails the source.
  s.recovering = true;
  s.err_requested = false;
  s.recover_since_ns = now;
  ++recovering_;
  // The oldest of the last kMaxRecoveries errors: within the window, this is one too many.
  const int64_t oldest = s.recent_errors[s.error_count % kMaxRecoveries];
  char what[256];
  if (s.error_count >= kMaxRecoveries && now - oldest < kRecoveryWindowNs) {
    std::snprintf(what, sizeof what,
                  "stream %s: %s (%s) on the QP again: %u errors within %lld s (at most %u "
                  "recoveries)",
                  s.name.c_str(), cause, tag, kMaxRecoveries + 1,
                  static_cast<long long>(kRecoveryWindowNs / 1'000'000'000), kMaxRecoveries);
    return fail(what, 0);
  }
  s.recent_errors[s.error_count % kMaxRecoveries] = now;
  ++s.error_count;
  int expected = 0;
  if (!first_error_state_.compare_exchange_strong(expected, 1)) return;
  std::snprintf(first_error_.data(), first_error_.size(),
                "RDMA device %s (%s), stream %s: receive %s (%s); the QP is reset and its "
                "receive WRs posted again; frames that arrive meanwhile are counted lost; later "
                "errors are only counted",
                device_.c_str(), interface_.c_str(), s.name.c_str(), cause, where);
  first_error_state_.store(2, std::memory_order_release);
}

// Capture thread, when the async thread flagged QP events: each stream's flag taken once.
void VerbsSource::take_qp_events() noexcept {
  // Sequentially consistent, as the async thread's flag-then-count: an event flagged after its
  // stream's flag was read here leaves the count set for the next poll.
  qp_events_pending_.store(0);
  for (uint32_t i = 0; i < streams_.size(); ++i) {
    const int type = qp_event_[i].exchange(0);
    if (type != 0) on_qp_event(i, static_cast<ibv_event_type>(type));
  }
}

const char* qp_event_name(ibv_event_type type) noexcept {
  switch (type) {
    case IBV_EVENT_QP_FATAL:
      return "IBV_EVENT_QP_FATAL";
    case IBV_EVENT_QP_REQ_ERR:
      return "IBV_EVENT_QP_REQ_ERR";
    case IBV_EVENT_QP_ACCESS_ERR:
      return "IBV_EVENT_QP_ACCESS_ERR";
    default:
      return "a QP event";
  }
}

// Makes sure a recovering QP flushes every posted WR: moves it to ERR unless the device already
// did. The kernel does not learn of an error the device raised itself (an error CQE, a
// catastrophic error): its cached state still says RTR, and mlx5 names that cached state as
// the receive queue's current one to the firmware (drivers/infiniband/hw/mlx5/qp.c
// modify_raw_packet_qp_rq), which refuses it while the queue is in error. ibv_query_qp asks the
// device and refreshes the cache (mlx5_ib_query_qp -> query_raw_packet_qp_rq_state), so the
// state is queried first, the move to ERR skipped when it is already there (the queue flushes
// by itself: flush_in_error_en), and the RESET that follows starts from the right state.
// The device may also put the queue in error between the query and the move (another error
// frame): the move is then refused like any from a stale state, and a second query finds ERR.
bool VerbsSource::flush_through_err(uint32_t index) noexcept {
  ibv_qp* qp = streams_[index].qp.get();
  ibv_qp_state state = IBV_QPS_RTR;
  if (const int rc = query_state(qp, state); rc != 0)
    return recovery_failed(index, "ibv_query_qp", rc);
  if (state == IBV_QPS_ERR) return true;
  const int rc = set_state(qp, IBV_QPS_ERR, port_);
  if (rc == 0 || (rc == EINVAL && query_state(qp, state) == 0 && state == IBV_QPS_ERR)) return true;
  return recovery_failed(index, "ibv_modify_qp to ERR", rc);
}

bool VerbsSource::recovery_failed(uint32_t index, const char* call, int err) noexcept {
  char what[160];
  std::snprintf(what, sizeof what, "stream %s: QP recovery: %s", streams_[index].name.c_str(),
                call);
  fail(what, err);
  return false;
}

// After each poll while a QP recovers: ERR (so every posted WR is flushed, whatever state the
// error left the QP in), then once every WR came back, RESET -> INIT -> RTR. The flow rule
// stays: it is attached to the QP, not to its state.
void VerbsSource::advance_recoveries() noexcept {
  for (uint32_t i = 0; i < streams_.size() && !failed(); ++i) {
    StreamQp& s = streams_[i];
    if (!s.recovering) continue;
    // First, even with nothing outstanding: RESET needs the kernel to know the state too.
    if (!s.err_requested) {
      s.err_requested = true;
      if (!flush_through_err(i)) return;  // failed, with the reason
    }
    if (s.outstanding == 0) {
      finish_recovery(i);
      continue;
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
