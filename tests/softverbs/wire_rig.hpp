// One raw packet QP on softverbs' synthetic-wire device (SOFTVERBS_DEVICES=svw=wire) with
// kDepth receive WRs of (128-byte header slot, 8 KiB payload slot), through the public verbs
// API only: the fixture of the wire and fault-knob tests. Failed expectations are counted in
// `failures` (the first ten printed) so a test reports every problem in one run.
#pragma once

#include <infiniband/verbs.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace wire_rig {

constexpr const char* kDev = "svw";
constexpr unsigned kLocalWrite = IBV_ACCESS_LOCAL_WRITE;
constexpr uint32_t kHdr = 128, kPayload = 8192, kDepth = 256;

inline int failures = 0;
inline void expect(bool ok, const char* what) {
  if (!ok && failures++ < 10) fprintf(stderr, "FAIL: %s\n", what);
}

struct Rig {
  ibv_device** list = nullptr;
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  ibv_qp* qp = nullptr;
  ibv_mr* hmr = nullptr;
  ibv_mr* pmr = nullptr;
  ibv_flow* flow = nullptr;
  std::vector<uint8_t> hdr;
  std::vector<uint8_t> pl;

  // `payload_fill`: what the payload slots hold before any frame (to see what was written).
  explicit Rig(uint8_t payload_fill = 0)
      : hdr(kDepth * kHdr, 0), pl(static_cast<size_t>(kDepth) * kPayload, payload_fill) {}
  Rig(const Rig&) = delete;
  Rig& operator=(const Rig&) = delete;

  bool open_device() {
    list = ibv_get_device_list(nullptr);
    for (int i = 0; list && list[i]; ++i)
      if (strcmp(ibv_get_device_name(list[i]), kDev) == 0) ctx = ibv_open_device(list[i]);
    pd = ctx ? ibv_alloc_pd(ctx) : nullptr;
    if (!pd) fprintf(stderr, "FAIL: no device %s (SOFTVERBS_DEVICES=%s=wire)\n", kDev, kDev);
    return pd != nullptr;
  }

  // Device, CQ of `cq_depth`, QP and MRs: 0 when ready, else the exit code (77: no CAP_NET_RAW).
  int open_qp(uint32_t cq_depth = kDepth) {
    if (!open_device()) return 1;
    cq = ibv_create_cq(ctx, static_cast<int>(cq_depth), nullptr, nullptr, 0);
    ibv_qp_init_attr qa{};
    qa.send_cq = qa.recv_cq = cq;
    qa.qp_type = IBV_QPT_RAW_PACKET;
    qa.cap.max_recv_wr = kDepth;
    qa.cap.max_recv_sge = 2;
    qp = cq ? ibv_create_qp(pd, &qa) : nullptr;
    if (!qp && errno == EPERM) return printf("SKIP: raw QPs need CAP_NET_RAW\n"), 77;
    hmr = ibv_reg_mr(pd, hdr.data(), hdr.size(), kLocalWrite);
    pmr = ibv_reg_mr(pd, pl.data(), pl.size(), kLocalWrite);
    if (!qp || !hmr || !pmr) return fprintf(stderr, "FAIL: setup: %s\n", strerror(errno)), 1;
    return 0;
  }

  int post(uint32_t slot) {
    ibv_sge sg[2] = {{reinterpret_cast<uintptr_t>(&hdr[slot * kHdr]), kHdr, hmr->lkey},
                     {reinterpret_cast<uintptr_t>(&pl[static_cast<size_t>(slot) * kPayload]),
                      kPayload, pmr->lkey}};
    ibv_recv_wr wr{};
    wr.wr_id = slot;
    wr.sg_list = sg;
    wr.num_sge = 2;
    ibv_recv_wr* bad = nullptr;
    return ibv_post_recv(qp, &wr, &bad);
  }

  bool to(ibv_qp_state s) {
    ibv_qp_attr m{};
    m.qp_state = s;
    m.port_num = 1;
    return ibv_modify_qp(qp, &m, IBV_QP_STATE | (s == IBV_QPS_INIT ? IBV_QP_PORT : 0)) == 0;
  }

  // Posts every slot and brings the QP to RTR.
  void arm() {
    expect(to(IBV_QPS_INIT), "INIT");
    for (uint32_t i = 0; i < kDepth; ++i)
      expect(post(i) == 0, "post_recv");
    expect(to(IBV_QPS_RTR), "RTR");
  }

  ibv_qp_state state() {
    ibv_qp_attr a{};
    ibv_qp_init_attr ia{};
    return ibv_query_qp(qp, &a, IBV_QP_STATE, &ia) == 0 ? a.qp_state : IBV_QPS_UNKNOWN;
  }

  // Up to `want` completions within `ms`.
  std::vector<ibv_wc> poll(std::size_t want, int ms) {
    std::vector<ibv_wc> out;
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (out.size() < want && std::chrono::steady_clock::now() < end) {
      ibv_wc wc[32];
      const int n = ibv_poll_cq(cq, 32, wc);
      expect(n >= 0, "poll_cq");
      out.insert(out.end(), wc, wc + (n > 0 ? n : 0));
    }
    return out;
  }

  ~Rig() {
    if (flow) ibv_destroy_flow(flow);
    if (qp) ibv_destroy_qp(qp);
    if (hmr) ibv_dereg_mr(hmr);
    if (pmr) ibv_dereg_mr(pmr);
    if (cq) ibv_destroy_cq(cq);
    if (pd) ibv_dealloc_pd(pd);
    if (ctx) ibv_close_device(ctx);
    if (list) ibv_free_device_list(list);
  }
};

}  // namespace wire_rig
