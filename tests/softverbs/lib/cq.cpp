// Completion queues: a ring written by the device side and read by poll_cq / start_poll.
// Overrun is fatal (IBV_EVENT_CQ_ERR), notification is one-shot per req_notify_cq.
// Sizes and limits follow libmlx5 (providers/mlx5/verbs.c create_cq) and the kernel
// (drivers/infiniband/hw/mlx5/cq.c mlx5_ib_create_cq); the PHC timestamp readers follow
// providers/mlx5/cq.c mlx5_cq_fill_pfns (tests/softverbs/README.md, "Clocks and CQs").
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "sv.hpp"

namespace sv {
namespace {

constexpr uint32_t kPoisonLen = 0xbad0bad0;  // byte_len of failed completions is undefined
constexpr uint64_t kSupportedWcFlags =
    IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |
    IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL | IBV_WC_EX_WITH_DLID_PATH_BITS |
    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP | IBV_WC_EX_WITH_CVLAN | IBV_WC_EX_WITH_FLOW_TAG |
    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;

void fire_comp_event(Cq& cq) {
  ibv_comp_channel* ch = cq.box.cq.channel;
  if (!ch) return;
  reinterpret_cast<ChannelBox*>(ch)->self->events.push(EventRecord{0, &cq.box.cq});
}

// ---- extended polling ----

// SOFTVERBS_INJECT_CLOCK_EBUSY: whether this start_poll, which found a completion on a CQ that
// reads the clock-info page, is one whose mlx5dv_get_clock_info gives up (EBUSY): the first,
// and every N-th after it.
bool clock_busy(Cq& cq) {
  const ClockEbusyInjection& e = clock_ebusy_injection();
  return cq.clock_update && e.every != 0 && cq.found_polls++ % e.every == 0;
}

// providers/mlx5/cq.c mlx5_start_poll on EBUSY from mlx5dv_get_clock_info, by rdma-core version.
// Up to v64 the clock is read after the CQE was parsed: the consumer index and the work queue
// have moved on, so the completion is lost (its WR never completes) and, without end_poll, the
// doorbell record is not updated. Up to v52 the CQ lock stays held too (e677dc664, v53, and the
// stable backports v44.7 .. v52.1, release it); a single-threaded CQ takes no lock. Since
// 0819419e7 (after v64) the clock is read first and the consumer index put back: nothing lost.
int start_poll_ebusy(Cq& cq, uint64_t h) {
  const EbusyFlow flow = clock_ebusy_injection().flow;
  if (flow != EbusyFlow::fixed) cq.head.store(h + 1, std::memory_order_release);
  if (flow == EbusyFlow::v44 && !cq.single_threaded) cq.lock_leaked.store(true);
  cq.cons_lock.unlock();
  return EBUSY;
}

// An overrun CQ is not detected here: libmlx5 polls by CQE ownership alone (providers/mlx5/
// cq.c get_sw_cqe), so the completions written before the overrun are still returned and then
// nothing more; the overrun is reported only as IBV_EVENT_CQ_ERR (Cq::push).
int start_poll(ibv_cq_ex* c, ibv_poll_cq_attr* attr) {
  Cq& cq = *cq_of(c);
  if (attr && attr->comp_mask) return EINVAL;
  cq.take_mlx5_lock("ibv_start_poll");
  cq.cons_lock.lock();
  const uint64_t h = cq.head.load(std::memory_order_relaxed);
  if (cq.tail.load(std::memory_order_acquire) == h) {
    cq.cons_lock.unlock();
    return ENOENT;  // the caller must not call end_poll
  }
  if (clock_busy(cq)) return start_poll_ebusy(cq, h);
  cq.cur_pos = h;
  cq.cur = &cq.ring[h & cq.mask];
  c->wr_id = cq.cur->wr_id;
  c->status = static_cast<ibv_wc_status>(cq.cur->status);
  return 0;
}

int next_poll(ibv_cq_ex* c) {
  Cq& cq = *cq_of(c);
  const uint64_t next = cq.cur_pos + 1;
  cq.head.store(next, std::memory_order_release);  // the previous entry is consumed
  cq.cur_pos = next;
  if (cq.tail.load(std::memory_order_acquire) == next) {
    cq.cur = nullptr;
    return ENOENT;
  }
  cq.cur = &cq.ring[next & cq.mask];
  c->wr_id = cq.cur->wr_id;
  c->status = static_cast<ibv_wc_status>(cq.cur->status);
  return 0;
}

void end_poll(ibv_cq_ex* c) {
  Cq& cq = *cq_of(c);
  cq.head.store(cq.cur ? cq.cur_pos + 1 : cq.cur_pos, std::memory_order_release);
  cq.cur = nullptr;
  cq.cons_lock.unlock();
}

ibv_wc_opcode read_opcode(ibv_cq_ex* c) {
  return static_cast<ibv_wc_opcode>(cq_of(c)->cur->opcode);
}
uint32_t read_vendor_err(ibv_cq_ex* c) {
  return cq_of(c)->cur->vendor_err;
}
uint32_t read_byte_len(ibv_cq_ex* c) {
  return cq_of(c)->cur->byte_len;
}
__be32 read_imm_data(ibv_cq_ex*) {
  return 0;
}
uint32_t read_qp_num(ibv_cq_ex* c) {
  return cq_of(c)->cur->qp_num;
}
uint32_t read_src_qp(ibv_cq_ex*) {
  return 0;
}
unsigned int read_wc_flags(ibv_cq_ex* c) {
  return cq_of(c)->cur->wc_flags;
}
uint32_t read_slid(ibv_cq_ex*) {
  return 0;
}
uint8_t read_sl(ibv_cq_ex*) {
  return 0;
}
uint8_t read_dlid_path_bits(ibv_cq_ex*) {
  return 0;
}
uint64_t read_completion_ts(ibv_cq_ex* c) {
  return ns_to_ticks(cq_of(c)->cur->ts_ns);
}
// mlx5_cq_read_wc_completion_wallclock_ns: the CQE's cycles through the clock-info page, i.e.
// the PHC in ns (TAI under ptp4l, not CLOCK_REALTIME).
uint64_t read_wallclock_ns(ibv_cq_ex* c) {
  return phc_ns(cq_of(c)->cur->ts_ns);
}
// Real-time clock mode, WALLCLOCK without COMPLETION_TIMESTAMP: libmlx5 installs
// mlx5_cq_read_wc_completion_ts, the raw CQE field, which is seconds << 32 | nanoseconds.
uint64_t read_wallclock_rt(ibv_cq_ex* c) {
  const uint64_t ns = phc_ns(cq_of(c)->cur->ts_ns);
  return (ns / 1000000000ULL) << 32 | (ns % 1000000000ULL);
}
uint16_t read_cvlan(ibv_cq_ex*) {
  return 0;
}
uint32_t read_flow_tag(ibv_cq_ex*) {
  return 0;
}

// Like mlx5: readers exist only for the fields asked for at creation.
void install_readers(ibv_cq_ex& c, uint64_t f) {
  c.start_poll = start_poll;
  c.next_poll = next_poll;
  c.end_poll = end_poll;
  c.read_opcode = read_opcode;
  c.read_vendor_err = read_vendor_err;
  c.read_wc_flags = read_wc_flags;
  if (f & IBV_WC_EX_WITH_BYTE_LEN) c.read_byte_len = read_byte_len;
  if (f & IBV_WC_EX_WITH_IMM) c.read_imm_data = read_imm_data;
  if (f & IBV_WC_EX_WITH_QP_NUM) c.read_qp_num = read_qp_num;
  if (f & IBV_WC_EX_WITH_SRC_QP) c.read_src_qp = read_src_qp;
  if (f & IBV_WC_EX_WITH_SLID) c.read_slid = read_slid;
  if (f & IBV_WC_EX_WITH_SL) c.read_sl = read_sl;
  if (f & IBV_WC_EX_WITH_DLID_PATH_BITS) c.read_dlid_path_bits = read_dlid_path_bits;
  if (f & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP) c.read_completion_ts = read_completion_ts;
  if (f & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK) {
    const bool rt = real_time_clock() && !(f & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP);
    c.read_completion_wallclock_ns = rt ? read_wallclock_rt : read_wallclock_ns;
  }
  if (f & IBV_WC_EX_WITH_CVLAN) c.read_cvlan = read_cvlan;
  if (f & IBV_WC_EX_WITH_FLOW_TAG) c.read_flow_tag = read_flow_tag;
}

Cq* make_cq(ibv_context* ic, int cqe, void* cq_context, ibv_comp_channel* ch, uint32_t vector,
            uint64_t wc_flags) {
  if (cqe < 1 || vector >= static_cast<uint32_t>(ic->num_comp_vectors)) {
    errno = EINVAL;
    return nullptr;
  }
  // libmlx5: ncqe = align_queue_size(cqe + 1), refused above 1 << 24; the kernel then refuses
  // roundup_pow_of_two(ncqe - 1 + 1) > 1 << log_max_cq_sz, i.e. ncqe - 1 > max_cqe.
  uint64_t n = 1;
  while (n < static_cast<uint64_t>(cqe) + 1)
    n <<= 1;
  if (n > (1u << 24) || n - 1 > static_cast<uint64_t>(max_cqe())) {
    errno = EINVAL;
    return nullptr;
  }
  auto* cq = new Cq;
  cq->box.self = cq;
  cq->ctx = ctx_of(ic);
  cq->ring.resize(n);
  cq->mask = n - 1;
  cq->capacity = n - 1;
  cq->wc_flags_ex = wc_flags;
  ibv_cq_ex& c = cq->box.cq;
  c.context = ic;
  c.channel = ch;
  c.cq_context = cq_context;
  c.handle = allocate_key() >> 8;
  c.cqe = static_cast<int>(n - 1);
  pthread_mutex_init(&c.mutex, nullptr);
  pthread_cond_init(&c.cond, nullptr);
  install_readers(c, wc_flags);
  if (ch) {
    pthread_mutex_lock(&ch->context->mutex);
    ++ch->refcnt;
    pthread_mutex_unlock(&ch->context->mutex);
  }
  return cq;
}

// SOFTVERBS_TRACE=1: what the application asked for, for tests to check (no device counterpart;
// libmlx5's MLX5_DEBUG_MASK prints only its failures).
void trace_cq(const Cq& cq, uint64_t wc_flags) {
  if (!trace_enabled()) return;
  struct Named {
    uint64_t bit;
    const char* name;
  };
  static const Named names[] = {
      {IBV_WC_EX_WITH_BYTE_LEN, "BYTE_LEN"},
      {IBV_WC_EX_WITH_QP_NUM, "QP_NUM"},
      {IBV_WC_EX_WITH_COMPLETION_TIMESTAMP, "COMPLETION_TIMESTAMP"},
      {IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK, "COMPLETION_TIMESTAMP_WALLCLOCK"}};
  std::string flags;
  for (const Named& n : names)
    if (wc_flags & n.bit) {
      // Appended piecewise: a "|" + std::string temporary trips GCC 12's -Wrestrict at -O3.
      if (!flags.empty()) flags += '|';
      flags += n.name;
    }
  fprintf(stderr, "softverbs: %s: ibv_create_cq_ex: %d entries, wc_flags %s, %s\n",
          cq.ctx->dev->cfg.name.c_str(), cq.box.cq.cqe, flags.empty() ? "0" : flags.c_str(),
          cq.single_threaded ? "single-threaded" : "locked");
}

void fill_wc(const Cqe& e, ibv_wc& wc) {
  memset(&wc, 0, sizeof wc);
  wc.wr_id = e.wr_id;
  wc.status = static_cast<ibv_wc_status>(e.status);
  wc.opcode = static_cast<ibv_wc_opcode>(e.opcode);
  wc.vendor_err = e.vendor_err;
  wc.qp_num = e.qp_num;
  const bool ok = e.status == IBV_WC_SUCCESS;
  wc.byte_len = ok ? e.byte_len : kPoisonLen;
  wc.wc_flags = ok ? e.wc_flags : 0;
}

}  // namespace

bool Cq::push(const Cqe& e) {
  std::lock_guard<Spin> g(prod_lock);
  if (dead.load(std::memory_order_relaxed)) return false;  // no CQE is written after an overrun
  const uint64_t t = tail.load(std::memory_order_relaxed);
  const uint64_t inject = cq_overrun_after();
  if (t - head.load(std::memory_order_acquire) >= capacity || ++pushed == inject) {
    dead.store(true);
    ctx->post_async(IBV_EVENT_CQ_ERR, &box.cq);
    return false;
  }
  ring[t & mask] = e;
  tail.store(t + 1, std::memory_order_seq_cst);
  if (armed.load(std::memory_order_seq_cst) && armed.exchange(false)) {
    pthread_mutex_lock(&box.cq.mutex);
    fire_comp_event(*this);
    pthread_mutex_unlock(&box.cq.mutex);
  }
  return true;
}

void Cq::take_mlx5_lock(const char* call) const {
  if (!lock_leaked.load()) return;
  fprintf(stderr,
          "softverbs: %s would hang: this CQ's lock is still held since ibv_start_poll returned "
          "EBUSY (libmlx5 of rdma-core before v53, mlx5_start_poll; the CQ was not created "
          "IBV_CREATE_CQ_ATTR_SINGLE_THREADED)\n",
          call);
  abort();
}

void Cq::purge(uint32_t qp_num) {
  // Both locks: no producer is mid-write and no consumer holds an entry. Kept entries slide
  // towards the tail in order; the producer only ever writes beyond the tail.
  std::lock_guard<Spin> c(cons_lock);
  std::lock_guard<Spin> p(prod_lock);
  const uint64_t h = head.load(std::memory_order_relaxed);
  const uint64_t t = tail.load(std::memory_order_relaxed);
  uint64_t w = t;
  for (uint64_t r = t; r-- > h;) {
    const Cqe e = ring[r & mask];
    if (e.qp_num != qp_num) ring[--w & mask] = e;
  }
  head.store(w, std::memory_order_release);
}

int poll_cq(ibv_cq* c, int n, ibv_wc* wc) {
  Cq& cq = *cq_of(c);
  if (n <= 0) return 0;  // an overrun CQ still returns what it holds (start_poll)
  cq.take_mlx5_lock("ibv_poll_cq");
  std::lock_guard<Spin> g(cq.cons_lock);
  const uint64_t h = cq.head.load(std::memory_order_relaxed);
  const uint64_t avail = cq.tail.load(std::memory_order_acquire) - h;
  const uint64_t k = avail < static_cast<uint64_t>(n) ? avail : static_cast<uint64_t>(n);
  for (uint64_t i = 0; i < k; ++i)
    fill_wc(cq.ring[(h + i) & cq.mask], wc[i]);
  cq.head.store(h + k, std::memory_order_release);
  return static_cast<int>(k);
}

int req_notify_cq(ibv_cq* c, int solicited_only) {
  (void)solicited_only;  // every receive completion counts: raw packets are never solicited
  Cq& cq = *cq_of(c);
  if (!c->channel) return EINVAL;
  cq.armed.store(true, std::memory_order_seq_cst);
  // Arming with unpolled completions fires at once, as the hardware compares indices.
  if (cq.tail.load(std::memory_order_seq_cst) != cq.head.load(std::memory_order_seq_cst) &&
      cq.armed.exchange(false)) {
    pthread_mutex_lock(&c->mutex);
    fire_comp_event(cq);
    pthread_mutex_unlock(&c->mutex);
  }
  return 0;
}

ibv_cq_ex* create_cq_ex(ibv_context* ic, ibv_cq_init_attr_ex* a) {
  if ((a->wc_flags & ~kSupportedWcFlags) ||
      (a->comp_mask &
       ~static_cast<uint32_t>(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD)) ||
      ((a->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
       (a->flags & ~static_cast<uint32_t>(IBV_CREATE_CQ_ATTR_SINGLE_THREADED)))) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  // libmlx5 offers WALLCLOCK with the kernel's clock-info page (PHC ns) or in real-time clock
  // mode (the raw s << 32 | ns field), else EOPNOTSUPP (mlx5_cq_fill_pfns); a device without a
  // clock offers no timestamps at all.
  const ClockMode clock = clock_mode();
  const bool wallclock = clock == ClockMode::wallclock || real_time_clock();
  if (((a->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK) && !wallclock) ||
      ((a->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP) && clock == ClockMode::none)) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  Cq* cq =
      make_cq(ic, static_cast<int>(a->cqe), a->cq_context, a->channel, a->comp_vector, a->wc_flags);
  if (!cq) return nullptr;
  cq->single_threaded = (a->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
                        (a->flags & IBV_CREATE_CQ_ATTR_SINGLE_THREADED);
  cq->clock_update = a->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;
  trace_cq(*cq, a->wc_flags);
  return &cq->box.cq;
}

}  // namespace sv

using namespace sv;

extern "C" {

ibv_cq* ibv_create_cq(ibv_context* ic, int cqe, void* cq_context, ibv_comp_channel* ch,
                      int vector) {
  constexpr uint64_t kClassic =
      IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |
      IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL | IBV_WC_EX_WITH_DLID_PATH_BITS;
  if (vector < 0) {
    errno = EINVAL;
    return nullptr;
  }
  Cq* cq = make_cq(ic, cqe, cq_context, ch, static_cast<uint32_t>(vector), kClassic);
  return cq ? reinterpret_cast<ibv_cq*>(&cq->box.cq) : nullptr;
}

int ibv_destroy_cq(ibv_cq* c) {
  Cq* cq = cq_of(c);
  if (cq->users.load() != 0) return EBUSY;
  // Unread events go away with the CQ, as the kernel drops them from the event files...
  if (c->channel) reinterpret_cast<ChannelBox*>(c->channel)->self->events.withdraw(c);
  cq->ctx->async.withdraw(c);
  // ...and, like rdma-core, wait until every event that was read has been acknowledged.
  pthread_mutex_lock(&c->mutex);
  while (c->comp_events_completed != cq->comp_events_read ||
         c->async_events_completed != cq->async_events_read)
    pthread_cond_wait(&c->cond, &c->mutex);
  pthread_mutex_unlock(&c->mutex);
  if (c->channel) {
    pthread_mutex_lock(&c->channel->context->mutex);
    --c->channel->refcnt;
    pthread_mutex_unlock(&c->channel->context->mutex);
  }
  pthread_mutex_destroy(&c->mutex);
  pthread_cond_destroy(&c->cond);
  delete cq;
  return 0;
}

int ibv_resize_cq(ibv_cq*, int) {
  return EOPNOTSUPP;
}

ibv_comp_channel* ibv_create_comp_channel(ibv_context* ic) {
  auto* ch = new Channel;
  if (!ch->events.open()) {
    delete ch;
    return nullptr;
  }
  ch->box.self = ch;
  ch->box.ch.context = ic;
  ch->box.ch.fd = ch->events.read_fd();
  ch->box.ch.refcnt = 0;
  return &ch->box.ch;
}

int ibv_destroy_comp_channel(ibv_comp_channel* ch) {
  pthread_mutex_lock(&ch->context->mutex);
  const int refs = ch->refcnt;
  pthread_mutex_unlock(&ch->context->mutex);
  if (refs) {
    errno = EBUSY;
    return EBUSY;
  }
  delete reinterpret_cast<ChannelBox*>(ch)->self;
  return 0;
}

int ibv_get_cq_event(ibv_comp_channel* ch, ibv_cq** cq, void** cq_context) {
  EventRecord r{};
  if (!reinterpret_cast<ChannelBox*>(ch)->self->events.pop(r)) return -1;
  ibv_cq* c = static_cast<ibv_cq*>(r.obj);
  pthread_mutex_lock(&c->mutex);
  ++cq_of(c)->comp_events_read;
  pthread_mutex_unlock(&c->mutex);
  *cq = c;
  *cq_context = c->cq_context;
  return 0;
}

void ibv_ack_cq_events(ibv_cq* cq, unsigned int n) {
  pthread_mutex_lock(&cq->mutex);
  cq->comp_events_completed += n;
  pthread_cond_signal(&cq->cond);
  pthread_mutex_unlock(&cq->mutex);
}

}  // extern "C"
