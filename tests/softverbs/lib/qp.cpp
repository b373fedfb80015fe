// Raw packet queue pairs: creation (CAP_NET_RAW), the RESET/INIT/RTR/RTS/ERR state machine and
// the receive queue. Receives can be posted from INIT on (EINVAL in RESET, as libmlx5); those
// posted in INIT are held and armed at RTR; nothing is delivered before RTR.
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "sv.hpp"

namespace sv {
namespace {

uint32_t pow2_at_least(uint32_t v) {
  uint32_t n = 1;
  while (n < v)
    n <<= 1;
  return n;
}

bool legal_transition(ibv_qp_state from, ibv_qp_state to, int mask, const ibv_qp_attr& a) {
  if (to == IBV_QPS_RESET || to == IBV_QPS_ERR) return true;
  switch (from) {
    case IBV_QPS_RESET:
      return to == IBV_QPS_INIT && (mask & IBV_QP_PORT) && a.port_num == 1;
    case IBV_QPS_INIT:
      return (to == IBV_QPS_INIT || to == IBV_QPS_RTR) &&
             (!(mask & IBV_QP_PORT) || a.port_num == 1);
    case IBV_QPS_RTR:
      return to == IBV_QPS_RTS;
    case IBV_QPS_RTS:
      return to == IBV_QPS_RTS;
    default:
      return false;
  }
}

// The errno mlx5 answers for an init_attr it refuses, or 0.
int check_create(ibv_pd* pd, const ibv_qp_init_attr& in) {
  if (in.qp_type != IBV_QPT_RAW_PACKET) return EOPNOTSUPP;
  if (!has_cap_net_raw()) return EPERM;
  if (!in.send_cq || !in.recv_cq || !pd) return EINVAL;
  if (in.srq) return EOPNOTSUPP;
  const ibv_qp_cap& cap = in.cap;
  if (cap.max_recv_wr > kMaxQpWr || cap.max_send_wr > kMaxQpWr || cap.max_recv_sge > kMaxSge ||
      cap.max_send_sge > kMaxSge)
    return EINVAL;
  // A device whose queues take real-time timestamps only (rq_ts_format REAL_TIME): a CQ with
  // COMPLETION_TIMESTAMP asks for free-running ones (kernel infiniband/hw/mlx5/qp.c
  // get_ts_format: IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION without fr_sup -> EOPNOTSUPP; a CQ
  // with WALLCLOCK alone is created MLX5_IB_CREATE_CQ_FLAGS_REAL_TIME_TS and passes).
  const auto free_running = [](ibv_cq* c) {
    return (cq_of(c)->wc_flags_ex & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP) != 0;
  };
  if (clock_mode() == ClockMode::rtonly && (free_running(in.recv_cq) || free_running(in.send_cq)))
    return EOPNOTSUPP;
  return 0;
}

// Queue sizes as mlx5 rounds them; the application learns them through `cap`.
void size_queues(Qp& q, const ibv_qp_cap& cap) {
  q.wr_cap = cap.max_recv_wr ? pow2_at_least(cap.max_recv_wr) : 0;
  q.max_sge = cap.max_recv_wr ? (cap.max_recv_sge ? cap.max_recv_sge : 1) : 0;
  q.max_send_wr = cap.max_send_wr ? pow2_at_least(cap.max_send_wr) : 0;
  q.max_send_sge = cap.max_send_sge;
  q.max_inline = cap.max_inline_data;
  q.wr_id.resize(q.wr_cap);
  q.nsge.resize(q.wr_cap);
  q.sge.resize(static_cast<size_t>(q.wr_cap) * q.max_sge);
}

void fill_ibv_qp(Qp& q, ibv_context* ic, ibv_pd* pd, const ibv_qp_init_attr& in) {
  ibv_qp& qp = q.box.qp;
  qp.context = ic;
  qp.qp_context = in.qp_context;
  qp.pd = pd;
  qp.send_cq = in.send_cq;
  qp.recv_cq = in.recv_cq;
  qp.qp_num = allocate_qpn();
  qp.handle = qp.qp_num;
  qp.state = IBV_QPS_RESET;
  qp.qp_type = IBV_QPT_RAW_PACKET;
  pthread_mutex_init(&qp.mutex, nullptr);
  pthread_cond_init(&qp.cond, nullptr);
}

ibv_qp* create(ibv_context* ic, ibv_pd* pd, const ibv_qp_init_attr& in, ibv_qp_cap* out_cap) {
  int rc = check_create(pd, in);
  Context* ctx = ctx_of(ic);
  if (rc == 0) rc = engine_acquire(*ctx->dev);
  if (rc != 0) {
    errno = rc;
    return nullptr;
  }
  auto* q = new Qp;
  q->box.self = q;
  q->ctx = ctx;
  q->pd = pd_of(pd);
  q->rcq = cq_of(in.recv_cq);
  q->scq = cq_of(in.send_cq);
  size_queues(*q, in.cap);
  fill_ibv_qp(*q, ic, pd, in);
  q->rcq->users.fetch_add(1);
  q->scq->users.fetch_add(1);
  q->pd->users.fetch_add(1);
  if (out_cap) {
    out_cap->max_recv_wr = q->wr_cap;
    out_cap->max_recv_sge = q->max_sge;
    out_cap->max_send_wr = q->max_send_wr;
    out_cap->max_send_sge = q->max_send_sge;
  }
  if (trace_enabled())
    fprintf(stderr, "softverbs: %s: ibv_create_qp: qp %u\n", ctx->dev->cfg.name.c_str(),
            q->box.qp.qp_num);
  return &q->box.qp;
}

void fill_wc_send(Qp& q, const ibv_send_wr& wr, ibv_wc_status st) {
  Cqe e{};
  e.wr_id = wr.wr_id;
  e.status = static_cast<uint16_t>(st);
  e.opcode = IBV_WC_SEND;
  e.qp_num = q.box.qp.qp_num;
  e.ts_ns = realtime_ns();
  q.scq->push(e);
}

}  // namespace

void push_flush(Qp& q, uint64_t wr_id) {
  Cqe e{};
  e.wr_id = wr_id;
  e.status = IBV_WC_WR_FLUSH_ERR;
  e.opcode = IBV_WC_RECV;
  e.qp_num = q.box.qp.qp_num;
  e.vendor_err = 0xf9;
  q.rcq->push(e);
}

void flush_rq(Qp& q) {
  for (; q.rq_head != q.rq_tail; ++q.rq_head)
    push_flush(q, q.wr_id[q.rq_head & (q.wr_cap - 1)]);
}

ibv_qp* create_qp_ex(ibv_context* ic, ibv_qp_init_attr_ex* a) {
  const uint32_t known = IBV_QP_INIT_ATTR_PD;
  if (a->comp_mask & ~known) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  ibv_qp_init_attr in{};
  in.qp_context = a->qp_context;
  in.send_cq = a->send_cq;
  in.recv_cq = a->recv_cq;
  in.srq = a->srq;
  in.cap = a->cap;
  in.qp_type = a->qp_type;
  in.sq_sig_all = a->sq_sig_all;
  return create(ic, a->pd, in, &a->cap);
}

// As providers/mlx5/qp.c mlx5_post_recv: per WR first the queue overflow (ENOMEM), then
// num_sge against qp_state_max_gs (EINVAL: too many SGEs, or any WR while the QP is in RESET);
// *bad names the WR, the ones before it stay posted.
int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  Qp& q = *qp_of(qp);
  std::lock_guard<Spin> g(q.lock);
  for (; wr; wr = wr->next) {
    if (q.rq_tail - q.rq_head >= q.wr_cap) {
      *bad = wr;
      return ENOMEM;
    }
    if (wr->num_sge > q.state_max_sge || wr->num_sge < 0) {
      *bad = wr;
      return EINVAL;
    }
    if (q.state == IBV_QPS_ERR) {
      push_flush(q, wr->wr_id);  // the hardware flushes WRs posted to an errored QP
      continue;
    }
    const uint32_t slot = static_cast<uint32_t>(q.rq_tail & (q.wr_cap - 1));
    q.wr_id[slot] = wr->wr_id;
    q.nsge[slot] = static_cast<uint32_t>(wr->num_sge);
    if (wr->num_sge > 0)
      memcpy(&q.sge[static_cast<size_t>(slot) * q.max_sge], wr->sg_list,
             sizeof(ibv_sge) * static_cast<size_t>(wr->num_sge));
    ++q.rq_tail;
  }
  return 0;
}

int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) {
  Qp& q = *qp_of(qp);
  Device& dev = *q.ctx->dev;
  std::lock_guard<std::mutex> g(dev.mu);
  for (; wr; wr = wr->next) {
    if (q.state != IBV_QPS_RTS || wr->opcode != IBV_WR_SEND ||
        static_cast<uint32_t>(wr->num_sge) > q.max_send_sge || q.max_send_wr == 0) {
      *bad = wr;
      return EINVAL;
    }
    std::vector<uint8_t> frame;
    ibv_wc_status st = IBV_WC_SUCCESS;
    for (int i = 0; i < wr->num_sge && st == IBV_WC_SUCCESS; ++i) {
      const ibv_sge& s = wr->sg_list[i];
      const auto* src = reinterpret_cast<const uint8_t*>(s.addr);
      if (!(wr->send_flags & IBV_SEND_INLINE)) {
        auto it = dev.mrs.find(s.lkey);
        if (it == dev.mrs.end() || it->second->pd != q.pd || s.addr < it->second->addr ||
            s.addr + s.length > it->second->addr + it->second->length) {
          st = IBV_WC_LOC_PROT_ERR;
          break;
        }
        src = it->second->host + (s.addr - it->second->addr);
        if (it->second->device) {  // GPU memory: fetched with a CUDA copy, never dereferenced
          const size_t at = frame.size();
          frame.resize(at + s.length);
          if (!cuda_copy(frame.data() + at, src, s.length)) st = IBV_WC_LOC_PROT_ERR;
          continue;
        }
      }
      frame.insert(frame.end(), src, src + s.length);
    }
    if (st == IBV_WC_SUCCESS && dev.tx_fd >= 0 &&
        send(dev.tx_fd, frame.data(), frame.size(), 0) < 0)
      st = IBV_WC_GENERAL_ERR;
    if ((wr->send_flags & IBV_SEND_SIGNALED) || st != IBV_WC_SUCCESS) fill_wc_send(q, *wr, st);
  }
  return 0;
}

}  // namespace sv

using namespace sv;

extern "C" {

ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* a) {
  return create(pd->context, pd, *a, &a->cap);
}

int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* a, int mask) {
  Qp& q = *qp_of(qp);
  if (!(mask & IBV_QP_STATE)) return EINVAL;
  std::unique_lock<Spin> g(q.lock);
  // The kernel checks the transition from its cached state (mlx5_ib_modify_qp: cur_state is
  // IB_QP_CUR_STATE or qp->state), and for a raw packet QP names the cached RQ state as the
  // current one to the firmware (qp.c modify_raw_packet_qp_rq: rq_state = rq->state). After the
  // device moved the RQ to error itself, that is stale: the command fails (BAD_RES_STATE, which
  // core/cmd.c cmd_status_to_err makes EINVAL) until ibv_query_qp refreshed the cache.
  const ibv_qp_state from = (mask & IBV_QP_CUR_STATE) ? a->cur_qp_state : q.kernel_state;
  if (from != q.kernel_state || q.kernel_state != q.state ||
      !legal_transition(from, a->qp_state, mask, *a))
    return EINVAL;
  const ibv_qp_state to = a->qp_state;
  if (to == IBV_QPS_RESET) {  // mlx5_modify_qp cleans the CQs under their locks
    q.rcq->take_mlx5_lock("ibv_modify_qp to RESET");
    q.scq->take_mlx5_lock("ibv_modify_qp to RESET");
  }
  if (mask & IBV_QP_PORT) q.port = a->port_num;
  q.state = to;
  q.kernel_state = to;
  qp->state = to;
  if (to == IBV_QPS_ERR) flush_rq(q);
  if (to == IBV_QPS_RESET) q.rq_head = q.rq_tail;
  // set_qp_operational_state (providers/mlx5/verbs.c): receive WRs only from INIT to RESET.
  if (to == IBV_QPS_RESET) q.state_max_sge = -1;
  if (to == IBV_QPS_INIT) q.state_max_sge = static_cast<int>(q.max_sge);
  g.unlock();
  if (to == IBV_QPS_RESET) {
    q.rcq->purge(qp->qp_num);
    if (q.scq != q.rcq) q.scq->purge(qp->qp_num);
  }
  // A state change is a firmware command on mlx5 (a fraction of a millisecond or more); the
  // new state holds while it runs, so frames for a QP on its way back to RTR are dropped.
  if (const unsigned us = modify_qp_delay_us(); us != 0) usleep(us);
  return 0;
}

// For a raw packet QP the kernel asks the firmware (qp.c mlx5_ib_query_qp ->
// query_raw_packet_qp_state -> query_raw_packet_qp_rq_state) and keeps the answer as its
// cached state (rq->state, qp->state): the error state the device entered is seen here.
int ibv_query_qp(ibv_qp* qp, ibv_qp_attr* a, int, ibv_qp_init_attr* init) {
  Qp& q = *qp_of(qp);
  std::lock_guard<Spin> g(q.lock);
  q.kernel_state = q.state;
  qp->state = q.state;
  memset(a, 0, sizeof *a);
  a->qp_state = q.state;
  a->cur_qp_state = q.state;
  a->port_num = q.port;
  a->cap.max_recv_wr = q.wr_cap;
  a->cap.max_recv_sge = q.max_sge;
  a->cap.max_send_wr = q.max_send_wr;
  a->cap.max_send_sge = q.max_send_sge;
  if (init) {
    memset(init, 0, sizeof *init);
    init->qp_context = qp->qp_context;
    init->send_cq = qp->send_cq;
    init->recv_cq = qp->recv_cq;
    init->cap = a->cap;
    init->qp_type = IBV_QPT_RAW_PACKET;
  }
  return 0;
}

int ibv_destroy_qp(ibv_qp* qp) {
  Qp* q = qp_of(qp);
  Device& dev = *q->ctx->dev;
  {
    std::lock_guard<std::mutex> g(dev.mu);  // the engine is between batches
    if (q->flows != 0) return EBUSY;        // flows hold a reference, as in the kernel
  }
  // mlx5_destroy_qp takes both CQs' locks (mlx5_lock_cqs) to clean them.
  q->rcq->take_mlx5_lock("ibv_destroy_qp");
  q->scq->take_mlx5_lock("ibv_destroy_qp");
  q->ctx->async.withdraw(qp);  // its unread async events go with it, as in uverbs
  q->rcq->purge(qp->qp_num);
  if (q->scq != q->rcq) q->scq->purge(qp->qp_num);
  q->rcq->users.fetch_sub(1);
  q->scq->users.fetch_sub(1);
  q->pd->users.fetch_sub(1);
  pthread_mutex_destroy(&qp->mutex);
  pthread_cond_destroy(&qp->cond);
  delete q;
  engine_release(dev);
  return 0;
}

}  // extern "C"
