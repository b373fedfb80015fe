#include "capture/verbs/verbs_source.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "capture/net/packet.hpp"
#include "capture/verbs/device_finder.hpp"
#include "capture/verbs/flow_rule.hpp"
#include "capture/verbs/payload_registration.hpp"
#include "capture/verbs/qp_state.hpp"
#include "capture/verbs/stream_qp.hpp"

namespace rocecap::capture::verbs {
namespace {

std::string stream_name(const StreamKey& k) {
  return std::string(net::format_ipv4(k.group).data()) + ":" + std::to_string(k.port) + " from " +
         net::format_ipv4(k.source).data();
}

}  // namespace

const char* time_source_name(TimeSource s) noexcept {
  switch (s) {
    case TimeSource::nic_raw_clock:
      return "nic-raw-clock";
    case TimeSource::software:
      return "software";
  }
  return "unknown";
}

VerbsSource::VerbsSource(const VerbsOptions& o, Ingest& ingest, EventLog on_event)
    : ingest_(ingest),
      device_(o.device.empty() ? find_rdma_device(o.sysfs_root, o.interface) : o.device),
      interface_(o.interface),
      sysfs_root_(o.sysfs_root),
      port_(o.port),
      event_mode_(o.event_mode),
      on_event_(std::move(on_event)) {
  ctx_ = open_device(device_);
  out_of_buffer_start_ = out_of_buffer().value_or(0);
  pd_ = alloc_pd(ctx_.get(), device_);
  if (event_mode_) channel_ = create_comp_channel(ctx_.get(), device_);
  // A CQ overrun is fatal (the CQ stops), so the shared CQ holds at least one completion for
  // every receive WR that can be outstanding on it: the sum of the receive queue depths.
  uint64_t depth_sum = 0;
  for (const StreamPipeline* sp : ingest_.streams())
    depth_sum += sp->ring().slots();
  if (o.cq_size != 0 && o.cq_size < depth_sum) {
    throw VerbsError("RDMA device " + device_ + ": capture.cq_size " + std::to_string(o.cq_size) +
                         " is below the sum of the receive queue depths (" +
                         std::to_string(depth_sum) + "); a CQ overrun stops the capture",
                     0);
  }
  ibv_device_attr_ex dev{};
  if (const int rc = ibv_query_device_ex(ctx_.get(), nullptr, &dev); rc != 0) {
    throw VerbsError("RDMA device " + device_ + ": ibv_query_device_ex", rc);
  }
  const uint64_t entries = o.cq_size != 0 ? o.cq_size : depth_sum;
  check_cq_size(entries, depth_sum, static_cast<uint64_t>(dev.orig_attr.max_cqe));
  create_cq(static_cast<uint32_t>(entries), dev);
  streams_.resize(ingest_.streams().size());
  stream_count_ = static_cast<uint32_t>(streams_.size());
  recoveries_ = std::make_unique<common::RelaxedCounter[]>(streams_.size());
  qp_event_ = std::make_unique<std::atomic<int>[]>(streams_.size());
  released_ = std::make_shared<ReleaseMask>(stream_count_);
  for (uint32_t i = 0; i < streams_.size(); ++i)
    build_stream(i, *ingest_.streams()[i]);
  if (event_mode_ && ibv_req_notify_cq(ibv_cq_ex_to_cq(cq_.get()), 0) != 0) {
    throw VerbsError("RDMA device " + device_ + ": ibv_req_notify_cq", errno);
  }
  // Steering last, for every stream at once: a rule attached while later streams are still
  // built (memory registration takes long, GPU memory longer) would fill its ring and then
  // drop in the NIC until the first poll, a loss at the start of every run on the first
  // antennas only.
  for (uint32_t i = 0; i < streams_.size(); ++i)
    attach_flow(i);
  const int flags = fcntl(ctx_->async_fd, F_GETFL);
  if (flags < 0 || fcntl(ctx_->async_fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    throw VerbsError("RDMA device " + device_ + ": async event fd", errno);
  }
  async_thread_ = std::jthread([this](std::stop_token st) { async_events(st); });
}

VerbsSource::~VerbsSource() = default;

void VerbsSource::build_stream(uint32_t index, StreamPipeline& sp) {
  StreamQp& s = streams_[index];
  StreamRing& ring = sp.ring();
  const std::string what = "RDMA device " + device_ + ", stream " + stream_name(sp.spec().key);
  s.pipeline = &sp;
  s.name = stream_name(sp.spec().key);
  s.header_bytes = sp.split();
  s.payload_bytes = sp.spec().ring.payload_slot_bytes;
  const memory::HostMemory& hm = ring.header_memory();
  s.header_mr = register_memory(pd_.get(), hm.data(), hm.size(), what + " header slab");
  // Host memory, or GPU memory through dma-buf or peer memory (payload_registration.hpp).
  s.payload_mr = register_payload(pd_.get(), ring.payload_memory(), what + " payload slab").mr;
  build_slot_wrs(index);
  ring.set_release_mask(released_, index);
  ibv_qp_init_attr qa{};
  qa.send_cq = qa.recv_cq = ibv_cq_ex_to_cq(cq_.get());
  qa.qp_type = IBV_QPT_RAW_PACKET;
  qa.cap.max_recv_wr = ring.slots();
  qa.cap.max_recv_sge = 2;
  s.qp.reset(ibv_create_qp(pd_.get(), &qa));
  if (!s.qp && errno == EOPNOTSUPP && index == 0 && raw_clock_) {
    // The device's receive queues take no free-running timestamps (kernel
    // drivers/infiniband/hw/mlx5/qp.c get_ts_format: a CQ with COMPLETION_TIMESTAMP needs them,
    // a NIC whose rq_ts_format is real-time only refuses the QP). No QP uses the CQ yet: it is
    // made again without timestamps, software time, and said so.
    software_time_instead();
    qa.send_cq = qa.recv_cq = ibv_cq_ex_to_cq(cq_.get());
    s.qp.reset(ibv_create_qp(pd_.get(), &qa));
  }
  if (!s.qp) {
    const int err = errno;
    throw VerbsError(what + ": ibv_create_qp (raw packet)" +
                         (err == EPERM ? " needs CAP_NET_RAW" : std::string()),
                     err);
  }
  // RESET -> INIT, post every slot, -> RTR. Not earlier: libmlx5 refuses receive WRs in RESET
  // (providers/mlx5/verbs.c set_qp_operational_state sets rq.qp_state_max_gs = -1 for RESET,
  // and providers/mlx5/qp.c mlx5_post_recv answers EINVAL when num_sge exceeds it; rdma-core
  // >= v40, commit 988f90bc "Enforce IB spec QP state behaviour", IB spec C10-22). Not later:
  // for a raw packet QP mlx5_post_recv does not write the RQ doorbell record before RTR and
  // mlx5_modify_qp writes it on the move to RTR, so the slots posted in INIT are armed at RTR
  // and the QP receives from its first frame, nothing before.
  modify(s.qp.get(), IBV_QPS_INIT, port_, what);
  if (!repost(index)) throw VerbsError(what + ": " + reason_.data(), 0);
  modify(s.qp.get(), IBV_QPS_RTR, port_, what);
}

void VerbsSource::attach_flow(uint32_t index) {
  StreamQp& s = streams_[index];
  FlowRule rule = flow_rule(s.pipeline->spec().key, port_);
  s.flow.reset(ibv_create_flow(s.qp.get(), &rule.attr));
  if (!s.flow) {
    const int err = errno;
    throw VerbsError("RDMA device " + device_ + ", stream " + s.name + ": ibv_create_flow" +
                         (err == EPERM ? " needs CAP_NET_RAW" : std::string()),
                     err);
  }
}

bool VerbsSource::repost(uint32_t index) noexcept {
  StreamQp& s = streams_[index];
  // A QP in recovery takes no WRs: its slots wait in the ring until it is back in RTR.
  if (s.recovering) return true;
  // Asked after a poll for the streams whose rings marked released_ (and at start and after a
  // recovery): has_free() answers inline whether a take_free() call would find anything.
  StreamRing& ring = s.pipeline->ring();
  while (ring.has_free())
    if (!post_batch(index, ring.take_free(s.ids))) return false;
  return true;
}

void VerbsSource::build_slot_wrs(uint32_t index) {
  StreamQp& s = streams_[index];
  StreamRing& ring = s.pipeline->ring();
  // Loans would move a slot's payload out of the registered slab (packet_ring_source lends).
  if (ring.loans_enabled())
    throw VerbsError("stream " + s.name + ": a verbs ring takes no loans", 0);
  s.slot_wrs.assign(ring.slots(), ibv_recv_wr{});
  s.slot_sges.assign(2 * std::size_t{ring.slots()}, ibv_sge{});
  for (SlotId id = 0; id < ring.slots(); ++id) {
    ibv_sge* sg = &s.slot_sges[2 * std::size_t{id}];
    sg[0] = {reinterpret_cast<uintptr_t>(ring.header(id).data()), s.header_bytes,
             s.header_mr->lkey};
    sg[1] = {reinterpret_cast<uintptr_t>(ring.payload(id).data()), s.payload_bytes,
             s.payload_mr->lkey};
    ibv_recv_wr& wr = s.slot_wrs[id];
    wr.wr_id = wr_id(index, id);
    wr.sg_list = sg;
    wr.num_sge = 2;
  }
}

// One linked WR list per ibv_post_recv: one doorbell for the whole batch.
bool VerbsSource::post_batch(uint32_t index, std::size_t n) noexcept {
  StreamQp& s = streams_[index];
  if (n == 0) return true;
  ibv_recv_wr* first = &s.slot_wrs[s.ids[0]];
  ibv_recv_wr* last = first;
  for (std::size_t i = 1; i < n; ++i) {
    ibv_recv_wr* wr = &s.slot_wrs[s.ids[i]];
    last->next = wr;
    last = wr;
  }
  last->next = nullptr;
  ibv_recv_wr* bad = nullptr;
  if (const int rc = ibv_post_recv(s.qp.get(), first, &bad); rc != 0) {
    fail("ibv_post_recv", rc);
    return false;
  }
  posted_.add(n);
  s.outstanding += n;
  return true;
}

void VerbsSource::handle_completion(const BatchTime& t) noexcept {
  ibv_cq_ex* cq = cq_.get();
  const uint32_t stream = static_cast<uint32_t>(cq->wr_id >> 32);
  const auto slot = static_cast<SlotId>(cq->wr_id);
  if (stream >= stream_count_) [[unlikely]]
    return fail("completion with an unknown wr_id", 0);
  StreamQp& s = streams_[stream];
  --s.outstanding;
  if (cq->status != IBV_WC_SUCCESS) [[unlikely]]
    return handle_unsuccessful(stream, slot);
  const uint32_t len = ibv_wc_read_byte_len(cq);
  // One call site: on_slot is inlined, and a copy per time source would double it.
  int64_t ts = t.now_ns;
  uint16_t flags = 0;
  if (t.raw) {
    ts = t.map.to_ns(ibv_wc_read_completion_ts(cq));
    flags = kSlotHwTimestamp;
  }
  ingest_.on_slot(stream, slot, len, ts, flags);
}

void VerbsSource::handle_unsuccessful(uint32_t stream, SlotId slot) noexcept {
  ibv_cq_ex* cq = cq_.get();
  StreamQp& s = streams_[stream];
  s.pipeline->ring().give_back(slot);  // consumed by the NIC: posted again with the next batch
  // The QP's own flush after its error: the slot is back, nothing new went wrong.
  if (cq->status == IBV_WC_WR_FLUSH_ERR && s.recovering) {
    ++flushed_;
    return;
  }
  // A frame longer than header + payload slot (IBV_WC_LOC_LEN_ERR) is a QP error like any
  // other: on mlx5 an error CQE moves the receive queue to the error state (libmlx5 maps
  // syndrome LOCAL_LENGTH_ERR to it in providers/mlx5/cq.c mlx5_handle_error_cqe; the kernel's
  // mlx5e recovers its RQ after it: en/health.h cqe_syndrome_needs_recover). The frame is
  // rejected as oversize and the QP recovered, also on a device whose QP would go on.
  if (cq->status == IBV_WC_LOC_LEN_ERR) ingest_.count_oversize();
  on_qp_error(stream, slot, cq->status, ibv_wc_read_vendor_err(cq));
}

int VerbsSource::poll(int max) noexcept {
  return poll_cq(max);
}

// Two copies, chosen once at load time by the CPU (GCC function multiversioning, an ifunc):
// the AVX2 one compares the head memo (capture/frame_memo.hpp) 32 bytes per instruction.
// (Not on poll() itself: g++ does not multiversion a virtual function.)
#if defined(__x86_64__)
[[gnu::target_clones("avx2", "default")]]
#endif
int VerbsSource::poll_cq(int max) noexcept {
  if (failed()) return kFailed;
  polls_.add();
  ibv_cq_ex* cq = cq_.get();
  ibv_poll_cq_attr attr{};
  int rc = ibv_start_poll(cq, &attr);
  int n = 0;
  if (rc == 0) {
    const BatchTime t = batch_time();  // at most one clock read per batch
    do {
      handle_completion(t);
      ++n;
    } while (n < max && (rc = ibv_next_poll(cq)) == 0);
    ibv_end_poll(cq);
    if (rc == ENOENT) rc = 0;
  } else if (rc == ENOENT) {
    empty_polls_.add();
    rc = 0;
  }
  if (rc != 0) fail("polling the CQ (overrun or device error)", rc);
  completions_.add(static_cast<uint64_t>(n));
  if (qp_events_pending_.load(std::memory_order_relaxed) != 0) take_qp_events();
  if (recovering_ != 0 || flushed_ != 0) {
    advance_recoveries();
    n -= flushed_;
    flushed_ = 0;
  }
  // Only the rings that got slots back since the last poll; asking all of them cost ~10
  // instructions per packet with 64 streams (BENCHMARKS.md, issue 30).
  released_->take([this](uint32_t i) { return repost(i); });
  return failed() ? kFailed : n;
}

// One (ticks, CLOCK_REALTIME) pair: the clock read between two host clock reads, best of a
// few tries, so a preemption between the reads does not skew the fit.
bool VerbsSource::sample_clock(uint64_t& ticks, int64_t& ns) noexcept {
  constexpr int kTries = 5;
  constexpr int64_t kMaxBracketNs = 50'000;
  int64_t best = kMaxBracketNs + 1;
  for (int i = 0; i < kTries; ++i) {
    ibv_values_ex v{};
    v.comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
    const int64_t before = wall_ns();
    if (ibv_query_rt_values_ex(ctx_.get(), &v) != 0) return false;
    const int64_t after = wall_ns();
    if (after - before < best) {
      best = after - before;
      // mlx5 returns the cycle count in tv_nsec (tv_sec 0).
      ticks = static_cast<uint64_t>(v.raw_clock.tv_sec) * 1'000'000'000u +
              static_cast<uint64_t>(v.raw_clock.tv_nsec);
      ns = before + best / 2;
    }
  }
  return best <= kMaxBracketNs;
}

void VerbsSource::refresh_clock() noexcept {
  uint64_t ticks = 0;
  int64_t ns = 0;
  if (!fit_ || !sample_clock(ticks, ns)) return;  // keep the last fit
  fit_->add(ticks, ns);
  clock_.publish(fit_->map());
}

void VerbsSource::fail(const char* what, int err) noexcept {
  int expected = 0;
  if (!fail_state_.compare_exchange_strong(expected, 1)) return;  // the first reason stays
  std::snprintf(reason_.data(), reason_.size(), "RDMA device %s (%s): %s%s%s", device_.c_str(),
                interface_.c_str(), what, err != 0 ? ": " : "", err != 0 ? std::strerror(err) : "");
  fail_state_.store(2, std::memory_order_release);
}

void VerbsSource::wait(int timeout_ms) noexcept {
  if (!channel_) {  // busy polling
    sched_yield();
    return;
  }
  pollfd p{channel_->fd, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) <= 0) return;
  ibv_cq* cq = nullptr;
  void* cq_ctx = nullptr;
  if (ibv_get_cq_event(channel_.get(), &cq, &cq_ctx) != 0) return;
  ibv_ack_cq_events(cq, 1);
  // Re-armed before the caller polls, so a completion after that poll still wakes us.
  if (ibv_req_notify_cq(cq, 0) != 0) fail("ibv_req_notify_cq", errno);
}

VerbsStats VerbsSource::stats() const noexcept {
  return {polls_.get(),     empty_polls_.get(), completions_.get(),  oversize_.get(),
          wc_errors_.get(), posted_.get(),      qp_recoveries_.get()};
}

std::optional<uint64_t> VerbsSource::out_of_buffer() const {
  std::ifstream in(out_of_buffer_path(sysfs_root_, device_, port_));
  uint64_t v = 0;
  if (!(in >> v)) return std::nullopt;
  return v;
}

std::optional<uint64_t> VerbsSource::nic_drops() const noexcept {
  try {  // a sysfs read
    const auto now = out_of_buffer();
    if (!now) return std::nullopt;
    return *now >= out_of_buffer_start_ ? *now - out_of_buffer_start_ : *now;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

SourceReport VerbsSource::report() const {
  const VerbsStats v = stats();
  SourceReport r;
  r.device = device_;
  r.frames = v.completions;
  r.polls = v.polls;
  r.empty_polls = v.empty_polls;
  r.posted = v.posted;
  r.oversize = v.oversize;
  r.errors = v.wc_errors;
  r.recoveries = v.qp_recoveries;
  r.time_source = time_source_name(time_source_);
  r.first_error = first_error();
  r.device_view = true;
  return r;
}

// IBV_EVENT_QP_FATAL (and the other QP error events) on a stream's QP: flagged for the capture
// thread, which recovers that QP as after a completion error. On mlx5 a receive-only raw packet
// QP can raise only IBV_EVENT_QP_FATAL, for a work queue catastrophic error of its receive
// queue: the kernel registers mlx5_ib_qp_event as the RQ's handler (drivers/infiniband/hw/
// mlx5/qp.c create_user_qp), an RQ may raise only WQ_CATAS_ERROR and SRQ_LAST_WQE
// (qpc.c rq_allowed_event_types), and mlx5_ib_qp_event maps WQ_CATAS_ERROR to
// IB_EVENT_QP_FATAL; the QP has no send queue (max_send_wr 0) to raise one. The receive queue
// is then in error and flushes (created with flush_in_error_en: qp.c create_raw_packet_qp_rq),
// which RESET -> INIT -> RTR recovers like the error an error CQE leaves
// (ibv_get_async_event(3): the QP "transitioned to error state"). REQ_ERR and ACCESS_ERR, which
// mlx5 cannot raise here, mean the same error state on any device and are treated alike. The
// recovery bound applies: a QP that keeps failing fails the source.
int VerbsSource::on_async_qp_event(const ibv_async_event& ev) noexcept {
  const ibv_event_type type = ev.event_type;
  if (type != IBV_EVENT_QP_FATAL && type != IBV_EVENT_QP_REQ_ERR && type != IBV_EVENT_QP_ACCESS_ERR)
    return -1;
  for (uint32_t i = 0; i < streams_.size(); ++i) {
    if (streams_[i].qp.get() != ev.element.qp) continue;
    qp_event_[i].store(static_cast<int>(type));  // before the count: take_qp_events
    qp_events_pending_.fetch_add(1);
    return static_cast<int>(i);
  }
  return -1;  // not one of the streams' QPs: fatal as before
}

// Also the raw clock's refresh path: this thread wakes at least every 100 ms.
void VerbsSource::async_events(const std::stop_token& stop) {
  int64_t next_refresh = monotonic_ns() + kClockRefreshNs;
  while (!stop.stop_requested()) {
    if (raw_clock_ && monotonic_ns() >= next_refresh) {
      refresh_clock();
      next_refresh += kClockRefreshNs;
    }
    pollfd p{ctx_->async_fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    ibv_async_event ev{};
    if (ibv_get_async_event(ctx_.get(), &ev) != 0) continue;
    const ibv_event_type type = ev.event_type;
    // A QP error event of one of the streams' QPs is that stream's to recover (on_qp_event).
    const int stream = on_async_qp_event(ev);
    ibv_ack_async_event(&ev);
    const bool fatal = stream < 0 && (type == IBV_EVENT_CQ_ERR || type == IBV_EVENT_DEVICE_FATAL ||
                                      type == IBV_EVENT_QP_FATAL || type == IBV_EVENT_QP_REQ_ERR ||
                                      type == IBV_EVENT_QP_ACCESS_ERR);
    std::string msg = "RDMA device " + device_ + " (" + interface_ + ") port " +
                      std::to_string(port_) + ": async event " + ibv_event_type_str(type);
    if (stream >= 0) msg += " on the QP of stream " + streams_[stream].name + ": it is recovered";
    if (fatal) on_fatal_event(type);
    if (on_event_) on_event_(msg, fatal);
  }
}

}  // namespace rocecap::capture::verbs
