// Completion queues: notification, overrun, purge on RESET/destroy, flush on ERR, extended CQs.
#include <poll.h>

#include <cerrno>
#include <cstring>

#include "frames.hpp"
#include "harness.hpp"

namespace conf {
namespace {

bool readable(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

ibv_flow* add(Rig& rig, ibv_qp* q, const Stream& s) {
  FlowRule r = flow_rule(s);
  return rig.add_flow(q, reinterpret_cast<ibv_flow_attr*>(&r));
}

}  // namespace

CONF_CASE(comp_channel_one_shot, "req_notify_cq arms one event on the completion channel") {
  Rig rig({.recv_sge = 1, .channel = true});
  const Stream s = stream(30);
  add(rig, rig.qp, s);
  rig.post_n(rig.qp, 8, 0, 2048);
  Sender tx(options().tx_if);
  CONF_EQ(ibv_req_notify_cq(rig.cq, 0), 0, "arm");
  tx.send(udp_frame(s, 1, 100));
  CONF_CHECK(readable(rig.channel->fd, 2000), "no event after arming");
  ibv_cq* ev_cq = nullptr;
  void* ev_ctx = nullptr;
  CONF_EQ(ibv_get_cq_event(rig.channel, &ev_cq, &ev_ctx), 0, "get_cq_event");
  CONF_CHECK(ev_cq == rig.cq, "event names the CQ");
  ibv_ack_cq_events(rig.cq, 1);
  CONF_EQ(poll_for(rig.cq, 1, 1000).size(), size_t{1}, "the completion behind the event");
  tx.send(udp_frame(s, 2, 100));
  CONF_CHECK(!readable(rig.channel->fd, 300), "event without re-arming");
  CONF_EQ(poll_for(rig.cq, 1, 1000).size(), size_t{1}, "the frame still completed");
  CONF_EQ(ibv_req_notify_cq(rig.cq, 0), 0, "re-arm");
  tx.send(udp_frame(s, 3, 100));
  CONF_CHECK(readable(rig.channel->fd, 2000), "no event after re-arming");
  CONF_EQ(ibv_get_cq_event(rig.channel, &ev_cq, &ev_ctx), 0, "get_cq_event");
  ibv_ack_cq_events(rig.cq, 1);
}

CONF_CASE(cq_overrun_is_fatal, "CQ overrun raises IBV_EVENT_CQ_ERR on the async fd") {
  Rig rig({.cqe = 4, .recv_wr = 64, .recv_sge = 1});
  const int cqe = rig.cq->cqe;
  CONF_CHECK(cqe >= 4 && cqe < 64, "CQ size");
  const Stream s = stream(31);
  add(rig, rig.qp, s);
  rig.post_n(rig.qp, cqe + 4, 0, 2048);
  Sender tx(options().tx_if);
  for (int i = 0; i < cqe + 2; ++i)
    tx.send(udp_frame(s, static_cast<uint32_t>(i), 100));
  CONF_CHECK(readable(rig.ctx->async_fd, 3000), "no async event");
  ibv_async_event ev{};
  CONF_EQ(ibv_get_async_event(rig.ctx, &ev), 0, "get_async_event");
  CONF_EQ(static_cast<int>(ev.event_type), IBV_EVENT_CQ_ERR, ibv_event_type_str(ev.event_type));
  CONF_CHECK(ev.element.cq == rig.cq, "event names the CQ");
  ibv_ack_async_event(&ev);
  ibv_wc wc[64];
  const int n = ibv_poll_cq(rig.cq, 64, wc);
  CONF_CHECK(n <= cqe, "an overrun CQ returned more than it can hold");
}

CONF_CASE(reset_purges_completions, "moving a QP to RESET removes its pending completions") {
  Rig rig({.recv_sge = 1});
  ibv_qp* b = rig.add_qp(8, 1);
  const Stream sa = stream(32, 0), sb = stream(32, 1);
  add(rig, rig.qp, sa);
  add(rig, b, sb);
  rig.post_n(rig.qp, 2, 0, 2048, 0);
  rig.post_n(b, 1, 10, 2048, 2);
  Sender tx(options().tx_if);
  tx.send(udp_frame(sa, 1, 100));
  tx.send(udp_frame(sa, 2, 100));
  tx.send(udp_frame(sb, 3, 100));
  sleep_ms(300);
  to_state(rig.qp, IBV_QPS_RESET);
  auto wc = drain(rig.cq, 200);
  CONF_EQ(wc.size(), size_t{1}, "only the other QP's completion is left");
  CONF_EQ(wc[0].qp_num, b->qp_num, "the other QP");
}

CONF_CASE(destroy_purges_completions, "destroying a QP removes its pending completions") {
  Rig rig({.recv_sge = 1});
  ibv_qp* a = rig.add_qp(8, 1);
  ibv_qp* b = rig.add_qp(8, 1);
  const Stream sa = stream(33, 0), sb = stream(33, 1);
  ibv_flow* fa = add(rig, a, sa);
  add(rig, b, sb);
  rig.post_n(a, 2, 0, 2048, 0);
  rig.post_n(b, 1, 10, 2048, 2);
  Sender tx(options().tx_if);
  tx.send(udp_frame(sa, 1, 100));
  tx.send(udp_frame(sa, 2, 100));
  tx.send(udp_frame(sb, 3, 100));
  sleep_ms(300);
  CONF_EQ(ibv_destroy_qp(a), EBUSY, "a QP with flows attached cannot be destroyed");
  rig.destroy_flow(fa);
  rig.destroy_qp(a);
  auto wc = drain(rig.cq, 200);
  CONF_EQ(wc.size(), size_t{1}, "only the other QP's completion is left");
  CONF_EQ(wc[0].qp_num, b->qp_num, "the other QP");
}

CONF_CASE(err_flushes_with_wr_flush_err, "moving a QP to ERR flushes its WRs in order") {
  Rig rig({.recv_sge = 1});
  rig.post_n(rig.qp, 3, 90, 2048);
  to_state(rig.qp, IBV_QPS_ERR);
  auto wc = poll_for(rig.cq, 3, 2000);
  CONF_EQ(wc.size(), size_t{3}, "flush completions");
  for (uint64_t i = 0; i < 3; ++i) {
    CONF_EQ(static_cast<int>(wc[i].status), IBV_WC_WR_FLUSH_ERR, ibv_wc_status_str(wc[i].status));
    CONF_EQ(wc[i].wr_id, 90 + i, "posting order");
    CONF_EQ(wc[i].qp_num, rig.qp->qp_num, "qp_num");
  }
}

CONF_CASE(cq_ex_timestamps,
          "extended CQ: start/next/end_poll, wc_read_* and completion timestamps") {
  const uint64_t flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM |
                         IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
                         IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;
  Rig rig({.recv_sge = 1, .cq_ex = true, .wc_flags = flags});
  ibv_device_attr_ex da{};
  CONF_EQ(ibv_query_device_ex(rig.ctx, nullptr, &da), 0, "query_device_ex");
  const Stream s = stream(34);
  add(rig, rig.qp, s);
  rig.post_n(rig.qp, 2, 40, 2048);
  Sender tx(options().tx_if);
  timespec t0{};
  clock_gettime(CLOCK_REALTIME, &t0);
  const auto f1 = udp_frame(s, 1, 300);
  tx.send(f1);
  sleep_ms(20);
  tx.send(udp_frame(s, 2, 300));
  struct Got {
    uint64_t wr_id, ts, wall;
    uint32_t len, qpn;
    unsigned flags;
    int status, opcode;
  };
  std::vector<Got> got;
  for (int tries = 0; tries < 2000 && got.size() < 2; ++tries) {
    ibv_poll_cq_attr pa{};
    int rc = ibv_start_poll(rig.cqx, &pa);
    if (rc == ENOENT) {
      sleep_ms(1);
      continue;
    }
    CONF_EQ(rc, 0, "start_poll");
    do {
      got.push_back({rig.cqx->wr_id, ibv_wc_read_completion_ts(rig.cqx),
                     ibv_wc_read_completion_wallclock_ns(rig.cqx), ibv_wc_read_byte_len(rig.cqx),
                     ibv_wc_read_qp_num(rig.cqx), ibv_wc_read_wc_flags(rig.cqx), rig.cqx->status,
                     ibv_wc_read_opcode(rig.cqx)});
    } while (ibv_next_poll(rig.cqx) == 0);
    ibv_end_poll(rig.cqx);
  }
  timespec t1{};
  clock_gettime(CLOCK_REALTIME, &t1);
  CONF_EQ(got.size(), size_t{2}, "completions");
  CONF_EQ(got[0].status, static_cast<int>(IBV_WC_SUCCESS), "status");
  CONF_EQ(got[0].wr_id, uint64_t{40}, "wr_id");
  CONF_EQ(got[1].wr_id, uint64_t{41}, "wr_id");
  CONF_EQ(got[0].opcode, static_cast<int>(IBV_WC_RECV), "opcode");
  CONF_EQ(got[0].len, static_cast<uint32_t>(f1.size()), "byte_len");
  CONF_EQ(got[0].qpn, rig.qp->qp_num, "qp_num");
  CONF_CHECK(got[0].flags & IBV_WC_IP_CSUM_OK, "IP_CSUM_OK");
  const uint64_t w0 =
      static_cast<uint64_t>(t0.tv_sec) * 1000000000ULL + static_cast<uint64_t>(t0.tv_nsec);
  const uint64_t w1 =
      static_cast<uint64_t>(t1.tv_sec) * 1000000000ULL + static_cast<uint64_t>(t1.tv_nsec);
  CONF_CHECK(got[0].wall + 1000000000ULL >= w0 && got[1].wall <= w1 + 1000000000ULL,
             "wallclock timestamps outside the test's time");
  CONF_CHECK(got[1].wall > got[0].wall, "wallclock did not advance");
  const uint64_t dticks = (got[1].ts - got[0].ts) & da.completion_timestamp_mask;
  CONF_CHECK(got[1].ts != got[0].ts, "raw timestamps equal");
  const double raw_ns = static_cast<double>(dticks) * 1e6 / static_cast<double>(da.hca_core_clock);
  const double wall_ns = static_cast<double>(got[1].wall - got[0].wall);
  CONF_CHECK(raw_ns > wall_ns * 0.5 && raw_ns < wall_ns * 2 + 1e6,
             "raw ticks / hca_core_clock disagree with the wallclock interval");
}

}  // namespace conf
