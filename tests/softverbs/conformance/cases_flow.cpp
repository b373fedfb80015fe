// Flow steering: priority, replication, overlap, DONT_TRAP, sniffer.
#include <arpa/inet.h>

#include <cstring>

#include "frames.hpp"
#include "harness.hpp"

namespace conf {
namespace {

size_t count_qp(const std::vector<ibv_wc>& wc, const ibv_qp* q) {
  size_t n = 0;
  for (const auto& w : wc)
    n += w.qp_num == q->qp_num && w.status == IBV_WC_SUCCESS;
  return n;
}

ibv_flow* add(Rig& rig, ibv_qp* q, const Stream& s, uint16_t prio, uint32_t flags = 0) {
  FlowRule r = flow_rule(s, prio, flags);
  return rig.add_flow(q, reinterpret_cast<ibv_flow_attr*>(&r));
}

}  // namespace

// Priority orders the flow tables a rule can land in (kernel drivers/infiniband/hw/mlx5/fs.c
// get_flow_table: ib_prio_to_core_prio), which holds for unicast destinations; trapping
// multicast-only rules all share one table instead (next case).
CONF_CASE(flow_priority, "of two matching unicast rules the lower priority number wins") {
  if (options().dev_if.empty()) skip("no --dev-if: the device's MAC is needed for unicast frames");
  Rig rig({.recv_sge = 1});
  ibv_qp* b = rig.add_qp(64, 1);
  const Stream s = unicast_stream(20, options().dev_if);
  add(rig, rig.qp, s, 1);
  add(rig, b, s, 0);
  rig.post_n(rig.qp, 4, 0, 2048, 0);
  rig.post_n(b, 4, 10, 2048, 4);
  Sender tx(options().tx_if);
  tx.send(udp_frame(s, 1, 100));
  auto wc = collect(rig.cq, 1);
  CONF_EQ(count_qp(wc, b), size_t{1}, "priority 0 QP");
  CONF_EQ(count_qp(wc, rig.qp), size_t{0}, "priority 1 QP");
}

// fs.c get_flow_table: a NORMAL rule without DONT_TRAP whose first spec names a multicast
// destination (flow_is_multicast_only) goes to the one multicast table,
// MLX5_IB_FLOW_MCAST_PRIO, whatever priority it asks for; there identical matches share one
// entry, so each QP gets the frame.
CONF_CASE(flow_priority_multicast_ignored,
          "trapping multicast rules ignore priority: identical ones both deliver") {
  Rig rig({.recv_sge = 1});
  ibv_qp* b = rig.add_qp(64, 1);
  const Stream s = stream(27);
  add(rig, rig.qp, s, 1);
  add(rig, b, s, 0);
  rig.post_n(rig.qp, 4, 0, 2048, 0);
  rig.post_n(b, 4, 10, 2048, 4);
  Sender tx(options().tx_if);
  tx.send(udp_frame(s, 1, 100));
  auto wc = collect(rig.cq, 2);
  CONF_EQ(count_qp(wc, b), size_t{1}, "priority 0 QP");
  CONF_EQ(count_qp(wc, rig.qp), size_t{1}, "priority 1 QP (same multicast table)");
}

CONF_CASE(identical_rules_replicate, "identical rules on several QPs deliver to each QP") {
  Rig rig({.recv_sge = 1});
  ibv_qp* b = rig.add_qp(64, 1);
  const Stream s = stream(21);
  add(rig, rig.qp, s, 0);
  add(rig, b, s, 0);
  rig.post_n(rig.qp, 4, 0, 2048, 0);
  rig.post_n(b, 4, 10, 2048, 4);
  Sender tx(options().tx_if);
  tx.send(udp_frame(s, 1, 100));
  tx.send(udp_frame(s, 2, 100));
  auto wc = collect(rig.cq, 4);
  CONF_EQ(count_qp(wc, rig.qp), size_t{2}, "first QP");
  CONF_EQ(count_qp(wc, b), size_t{2}, "second QP");
}

CONF_CASE(overlapping_rules_deliver_once, "overlapping different rules deliver to one QP only") {
  Rig rig({.recv_sge = 1});
  ibv_qp* b = rig.add_qp(64, 1);
  const Stream s = stream(22);
  add(rig, rig.qp, s, 0);
  GroupRule g = group_rule(s, 0);
  rig.add_flow(b, reinterpret_cast<ibv_flow_attr*>(&g));
  rig.post_n(rig.qp, 4, 0, 2048, 0);
  rig.post_n(b, 4, 10, 2048, 4);
  Sender tx(options().tx_if);
  tx.send(udp_frame(s, 1, 100));
  auto wc = collect(rig.cq, 1);
  CONF_EQ(count_qp(wc, rig.qp) + count_qp(wc, b), size_t{1}, "one delivery in total");
}

CONF_CASE(dont_trap_continues, "a DONT_TRAP rule delivers and lets lower priorities match too") {
  Rig rig({.recv_sge = 1});
  ibv_qp* b = rig.add_qp(64, 1);
  const Stream s = stream(23);
  add(rig, rig.qp, s, 0, IBV_FLOW_ATTR_FLAGS_DONT_TRAP);
  add(rig, b, s, 1);
  rig.post_n(rig.qp, 4, 0, 2048, 0);
  rig.post_n(b, 4, 10, 2048, 4);
  Sender tx(options().tx_if);
  tx.send(udp_frame(s, 1, 100));
  auto wc = collect(rig.cq, 2);
  CONF_EQ(count_qp(wc, rig.qp), size_t{1}, "DONT_TRAP QP");
  CONF_EQ(count_qp(wc, b), size_t{1}, "lower-priority QP");
}

CONF_CASE(sniffer_sees_rx_and_tx, "a SNIFFER rule copies received and transmitted frames") {
  Rig rig({.recv_wr = 256, .recv_sge = 1, .buffer = 1 << 20});
  ibv_flow_attr a{};
  a.type = IBV_FLOW_ATTR_SNIFFER;
  a.size = sizeof a;
  a.port = 1;
  rig.add_flow(rig.qp, &a);
  rig.post_n(rig.qp, 256, 0, 4096);
  const Stream rx = stream(24, 0), txs = stream(24, 1);
  Sender in(options().tx_if);
  in.send(udp_frame(rx, 1, 100));
  const bool tx_case = !options().dev_if.empty();
  if (tx_case) {
    Sender out(options().dev_if);
    out.send(udp_frame(txs, 2, 100));
  }
  bool saw_rx = false, saw_tx = false;
  for (int round = 0; round < 50 && !(saw_rx && (saw_tx || !tx_case)); ++round) {
    for (const auto& w : drain(rig.cq, 100)) {
      if (w.status != IBV_WC_SUCCESS || w.byte_len < 42) continue;
      const uint8_t* f = rig.buf + w.wr_id * 4096;
      uint16_t dport;
      memcpy(&dport, f + 36, 2);
      saw_rx |= ntohs(dport) == rx.dport;
      saw_tx |= ntohs(dport) == txs.dport;
    }
  }
  CONF_CHECK(saw_rx, "sniffer missed the received frame");
  if (!tx_case) skip("no --dev-if: TX half not checked");
  CONF_CHECK(saw_tx, "sniffer missed the transmitted frame");
}

CONF_CASE(devices_are_isolated, "a second device only sees frames arriving on its own port") {
  if (options().dev2.empty() || options().tx_if2.empty()) skip("no --dev2/--tx-if2");
  Rig one({.recv_sge = 1});
  Rig two({.recv_sge = 1, .dev = options().dev2});
  const Stream s = stream(25);
  add(one, one.qp, s, 0);
  add(two, two.qp, s, 0);
  one.post_n(one.qp, 4, 0, 2048);
  two.post_n(two.qp, 4, 0, 2048);
  Sender to_one(options().tx_if), to_two(options().tx_if2);
  to_one.send(udp_frame(s, 1, 100));
  to_two.send(udp_frame(s, 2, 100));
  to_two.send(udp_frame(s, 3, 100));
  CONF_EQ(count_qp(collect(one.cq, 1), one.qp), size_t{1}, "frames on the first port");
  CONF_EQ(count_qp(collect(two.cq, 2), two.qp), size_t{2}, "frames on the second port");
}

}  // namespace conf
