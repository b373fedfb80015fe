// The verbs backend of one interface: one RDMA device, one PD, one shared extended CQ, and per
// stream one raw packet QP with one full-mask flow rule whose receive work requests are the
// stream's ring slots (SGE0 -> header slot, SGE1 -> payload slot). The capture thread polls
// the CQ and hands each completed slot to the Ingest, which checks it with the same rules as
// the copying backends and sequences it; slots the writer released are posted again in
// batches. A PacketSource (capture/packet_source.hpp): the daemon's one capture loop drives it
// like every other transport. See doc/verbs.md for the device behaviour relied on.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "capture/ingest.hpp"
#include "capture/packet_source.hpp"
#include "capture/release_mask.hpp"
#include "capture/verbs/hca_clock.hpp"
#include "capture/verbs/verbs_objects.hpp"
#include "common/relaxed_counter.hpp"

namespace rocecap::capture::verbs {

struct VerbsOptions {
  std::string device;     // RDMA device name (mlx5_0); found from `interface` when empty
  std::string interface;  // netdev, for finding the device and for messages
  uint8_t port = 1;
  uint32_t cq_size = 0;     // 0: the sum of the receive queue depths
  bool event_mode = false;  // sleep on a completion channel instead of spinning
  std::string sysfs_root = "/sys";
};

// Where completion timestamps come from, best first. There is no "NIC PHC" source: asking for
// IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK makes libmlx5 read the kernel's clock-info page
// at every poll, which fails now and then with EBUSY, and the libmlx5 of Debian 12 (rdma-core
// 44) then loses the completion and keeps the CQ locked (completion_queue.cpp).
enum class TimeSource {
  nic_raw_clock,  // raw HCA ticks, converted here with a fit against CLOCK_REALTIME
  software,       // no NIC clock: one clock_gettime per polled batch
};
// "nic-raw-clock", "software": for logs, manifest and metrics.
const char* time_source_name(TimeSource s) noexcept;
// "IBV_EVENT_QP_FATAL" and the other QP error events, for messages.
const char* qp_event_name(ibv_event_type type) noexcept;

struct VerbsStats {
  uint64_t polls = 0;        // CQ polls
  uint64_t empty_polls = 0;  // ... that found nothing
  uint64_t completions = 0;
  uint64_t oversize = 0;   // IBV_WC_LOC_LEN_ERR: frame longer than the posted slot (QP error)
  uint64_t wc_errors = 0;  // every other failed completion (flushes of a recovering QP excluded)
  uint64_t posted = 0;     // receive WRs posted
  uint64_t qp_recoveries = 0;  // QPs taken from the error state back to RTR
};

// Called from the async event thread with a description; fatal events also fail the source.
using EventLog = std::function<void(const std::string& message, bool fatal)>;

class VerbsSource final : public PacketSource {
 public:
  // Opens the device and builds CQ, QPs (RESET -> INIT, every slot posted, -> RTR) and then the
  // flows for `ingest`'s streams. Throws VerbsError naming the device, stream and call that failed.
  VerbsSource(const VerbsOptions& options, Ingest& ingest, EventLog on_event = {});
  ~VerbsSource() override;
  VerbsSource(const VerbsSource&) = delete;
  VerbsSource& operator=(const VerbsSource&) = delete;

  // ---- capture thread ----
  // Handles up to `max` completions, then re-posts released slots. Returns the completions
  // of frames handled (not the flushed WRs of a recovering QP: they carry no frame), or
  // kFailed once the source has failed (failure() says why).
  int poll(int max) noexcept override;
  // Event mode: sleeps on the completion channel until a completion arrives or `timeout_ms`
  // passes, then re-arms the CQ. Busy polling: sched_yield (free on a dedicated core, where
  // nothing else is runnable; it keeps a shared core usable).
  void wait(int timeout_ms) noexcept override;

  // ---- any thread ----
  bool failed() const noexcept override { return fail_state_.load(std::memory_order_acquire) == 2; }
  std::string failure() const override {
    return failed() ? std::string(reason_.data()) : std::string();
  }
  VerbsStats stats() const noexcept;
  // The PacketSource view of stats() and the clock; device_view set.
  SourceReport report() const override;
  uint64_t stream_recoveries(uint32_t index) const noexcept override {
    return qp_recoveries(index);
  }
  std::string take_event() override { return take_first_error(); }
  // hw_counters/out_of_buffer of the port (frames dropped for want of a posted slot);
  // nullopt when the counter file is missing or unreadable.
  std::optional<uint64_t> out_of_buffer() const;
  // out_of_buffer counted since this source was built (the counter is the port's, since the
  // driver loaded), or nullopt (also when the read fails).
  std::optional<uint64_t> nic_drops() const noexcept override;
  const std::string& device() const noexcept { return device_; }
  bool hw_timestamps() const noexcept { return hw_timestamps_; }
  TimeSource time_source() const noexcept { return time_source_; }
  // Entries of the shared CQ as created (libmlx5 rounds the request up to 2^k - 1).
  uint32_t cq_entries() const noexcept { return cq_entries_; }
  // Recoveries of stream `index`'s QP (index into the Ingest's streams).
  uint64_t qp_recoveries(uint32_t index) const noexcept { return recoveries_[index].get(); }
  // The first failed completion (oversize included), with its context (device, stream,
  // status, vendor_err, what was done about it); empty while there was none. The capture
  // thread only records it: take_first_error() hands it over once, for the caller to log.
  std::string first_error() const;
  std::string take_first_error();

  // Completion errors, IBV_WC_LOC_LEN_ERR (oversize) included: the stream's QP is recovered
  // (ERR, every WR flushed, RESET -> INIT, slots posted again, -> RTR) unless it already needed
  // kMaxRecoveries recoveries in the last kRecoveryWindowNs; then the source fails. A QP that does
  // not flush within kFlushTimeoutNs also fails it: never a silent stall.
  static constexpr uint32_t kMaxRecoveries = 3;
  static constexpr int64_t kRecoveryWindowNs = 10'000'000'000;
  static constexpr int64_t kFlushTimeoutNs = 2'000'000'000;
  // How often the raw-clock fit takes a new sample.
  static constexpr int64_t kClockRefreshNs = 1'000'000'000;

  // wr_id layout: stream index in the high 32 bits, slot id in the low 32 bits.
  static uint64_t wr_id(uint32_t stream, SlotId slot) noexcept {
    return (uint64_t{stream} << 32) | slot;
  }

 private:
  struct StreamQp;
  static constexpr std::size_t kPostBatch = 64;

  void check_cq_size(uint64_t entries, uint64_t depth_sum, uint64_t max_cqe) const;
  void create_cq(uint32_t entries, const ibv_device_attr_ex& dev);
  CompletionQueue make_cq(uint32_t entries, uint64_t wc_flags) const;
  bool start_raw_clock(const ibv_device_attr_ex& dev);
  void software_time_instead();
  void build_stream(uint32_t index, StreamPipeline& sp);  // CQ side: MRs, QP in RTR, slots posted
  void attach_flow(uint32_t index);                       // steering: after every stream is built
  // What a batch's completions are stamped with, read once per batch: the host clock
  // (software time) or the published raw-clock map.
  struct BatchTime {
    bool raw = false;
    int64_t now_ns = 0;
    ClockMap map{};
  };
  // Inlined into poll's loop, its unsuccessful completions out of line: a call per completion
  // saved and restored six registers around a handful of instructions.
  [[gnu::always_inline]] inline void handle_completion(const BatchTime& t) noexcept;
  [[gnu::noinline]] void handle_unsuccessful(uint32_t stream, SlotId slot) noexcept;
  void on_qp_error(uint32_t index, SlotId slot, ibv_wc_status status, uint32_t vendor_err) noexcept;
  void on_qp_event(uint32_t index, ibv_event_type type) noexcept;
  void start_recovery(uint32_t index, const char* cause, const char* tag,
                      const char* where) noexcept;
  void take_qp_events() noexcept;
  // Async thread: the stream whose QP a QP error event names (flagged for the capture thread),
  // or -1.
  int on_async_qp_event(const ibv_async_event& ev) noexcept;
  void advance_recoveries() noexcept;
  bool flush_through_err(uint32_t index) noexcept;
  bool recovery_failed(uint32_t index, const char* call, int err) noexcept;
  void finish_recovery(uint32_t index) noexcept;
  bool sample_clock(uint64_t& ticks, int64_t& ns) noexcept;
  void refresh_clock() noexcept;
  BatchTime batch_time() noexcept;
  void on_fatal_event(ibv_event_type type) noexcept;
  bool repost(uint32_t index) noexcept;
  // poll(), compiled twice (verbs_source.cpp). clang requires the attribute on the first
  // declaration (else "cannot become a multiversioned function after first usage").
#if defined(__x86_64__)
  [[gnu::target_clones("avx2", "default")]]
#endif
  int poll_cq(int max) noexcept;
  bool post_batch(uint32_t index, std::size_t n) noexcept;
  void build_slot_wrs(uint32_t index);  // start-up: StreamQp::slot_wrs
  void fail(const char* what, int err) noexcept;
  void async_events(const std::stop_token& stop);

  Ingest& ingest_;
  std::string device_;
  std::string interface_;
  std::string sysfs_root_;
  uint8_t port_;
  bool event_mode_;
  bool hw_timestamps_ = false;
  bool raw_clock_ = false;  // hw_timestamps_ from raw ticks through clock_
  TimeSource time_source_ = TimeSource::software;
  uint32_t cq_entries_ = 0;
  // Raw ticks -> CLOCK_REALTIME ns.
  std::optional<ClockFit> fit_;  // async thread (and the constructor)
  PublishedClock clock_;
  uint64_t out_of_buffer_start_ = 0;
  EventLog on_event_;
  // Creation order; destroyed in reverse (QPs and flows before CQ, MRs, PD, context).
  Context ctx_;
  ProtectionDomain pd_;
  CompChannel channel_;
  CompletionQueue cq_;
  std::vector<StreamQp> streams_;
  // The streams whose rings got slots back since the last poll (shared with the rings).
  std::shared_ptr<ReleaseMask> released_;
  // streams_.size(), kept: checking a wr_id against it per completion took a division by
  // sizeof(StreamQp) (a multiply and shifts) where this is one load.
  uint32_t stream_count_ = 0;
  common::RelaxedCounter polls_, empty_polls_, completions_, oversize_, wc_errors_, posted_;
  common::RelaxedCounter qp_recoveries_;
  std::unique_ptr<common::RelaxedCounter[]> recoveries_;  // per stream
  // QP error events from the async thread, per stream (the ibv_event_type, 0: none), and how
  // many were flagged since the capture thread last looked (one load per poll).
  std::unique_ptr<std::atomic<int>[]> qp_event_;
  std::atomic<uint32_t> qp_events_pending_{0};
  uint32_t recovering_ = 0;                // streams whose QP is being recovered (capture thread)
  int flushed_ = 0;                        // flush completions in the current poll (capture thread)
  std::atomic<int> first_error_state_{0};  // 0 none, 1 being written, 2 recorded, 3 taken
  std::array<char, 384> first_error_{};
  std::atomic<int> fail_state_{0};  // 0 running, 1 reason being written, 2 failed
  std::array<char, 320> reason_{};
  std::jthread async_thread_;  // last: stopped and joined before anything above is destroyed
};

}  // namespace rocecap::capture::verbs
