// Capture-loop cost per packet against softverbs' synthetic wire: the wire thread completes
// WRs like a NIC's DMA engine, this thread polls the CQ, reads each header and re-posts, as
// rocecap's capture thread does. Reports packets/s and capture-thread CPU ns per packet.
// Usage: LD_LIBRARY_PATH=<softverbs lib> SOFTVERBS_DEVICES=svw=wire softverbs_bench_wire [SECONDS]
#include <arpa/inet.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

namespace {

constexpr unsigned kLocalWrite = IBV_ACCESS_LOCAL_WRITE;
constexpr uint32_t kHdr = 128, kPayload = 8192, kDepth = 4096, kBatch = 32;

double now(clockid_t c) {
  timespec t{};
  clock_gettime(c, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

struct Flow {
  ibv_flow_attr attr;
  ibv_flow_spec_ipv4 ip;
  ibv_flow_spec_tcp_udp udp;
};

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? atof(argv[1]) : 3.0;
  ibv_device** list = ibv_get_device_list(nullptr);
  if (!list || !list[0]) {
    fprintf(stderr, "no device: set SOFTVERBS_DEVICES=svw=wire\n");
    return 1;
  }
  ibv_context* ctx = ibv_open_device(list[0]);
  ibv_pd* pd = ibv_alloc_pd(ctx);
  ibv_cq* cq = ibv_create_cq(ctx, kDepth, nullptr, nullptr, 0);
  ibv_qp_init_attr qa{};
  qa.send_cq = qa.recv_cq = cq;
  qa.qp_type = IBV_QPT_RAW_PACKET;
  qa.cap.max_recv_wr = kDepth;
  qa.cap.max_recv_sge = 2;
  ibv_qp* qp = ibv_create_qp(pd, &qa);
  if (!qp) {
    fprintf(stderr, "create_qp: %s\n", strerror(errno));
    return 1;
  }
  std::vector<uint8_t> hdr(kDepth * kHdr), pl(static_cast<size_t>(kDepth) * kPayload);
  ibv_mr* hmr = ibv_reg_mr(pd, hdr.data(), hdr.size(), kLocalWrite);
  ibv_mr* pmr = ibv_reg_mr(pd, pl.data(), pl.size(), kLocalWrite);
  std::vector<ibv_sge> sges(kDepth * 2);
  std::vector<ibv_recv_wr> wrs(kDepth);
  ibv_qp_attr m{};
  m.qp_state = IBV_QPS_INIT;  // receive WRs are refused in RESET (libmlx5: EINVAL)
  m.port_num = 1;
  ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PORT);
  for (uint32_t i = 0; i < kDepth; ++i) {
    sges[2 * i] = {reinterpret_cast<uintptr_t>(&hdr[i * kHdr]), kHdr, hmr->lkey};
    sges[2 * i + 1] = {reinterpret_cast<uintptr_t>(&pl[static_cast<size_t>(i) * kPayload]),
                       kPayload, pmr->lkey};
    wrs[i] = ibv_recv_wr{i, nullptr, &sges[2 * i], 2};
    ibv_recv_wr* bad = nullptr;
    ibv_post_recv(qp, &wrs[i], &bad);
  }
  m.qp_state = IBV_QPS_RTR;
  ibv_modify_qp(qp, &m, IBV_QP_STATE);
  Flow f{};
  f.attr = {0, IBV_FLOW_ATTR_NORMAL, sizeof f, 0, 2, 1, 0};
  f.ip.type = IBV_FLOW_SPEC_IPV4;
  f.ip.size = sizeof f.ip;
  f.ip.val.dst_ip = htonl(0xef110001);
  f.ip.mask.dst_ip = 0xffffffff;
  f.udp.type = IBV_FLOW_SPEC_UDP;
  f.udp.size = sizeof f.udp;
  f.udp.val.dst_port = htons(36001);
  f.udp.mask.dst_port = 0xffff;
  ibv_flow* flow = ibv_create_flow(qp, reinterpret_cast<ibv_flow_attr*>(&f));
  if (!flow) return 1;

  uint64_t packets = 0, checksum = 0;
  const double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_THREAD_CPUTIME_ID);
  while (now(CLOCK_MONOTONIC) - w0 < seconds) {
    for (int spin = 0; spin < 4096; ++spin) {
      ibv_wc wc[kBatch];
      const int n = ibv_poll_cq(cq, kBatch, wc);
      ibv_recv_wr* head = nullptr;
      for (int i = n - 1; i >= 0; --i) {
        const auto slot = static_cast<uint32_t>(wc[i].wr_id);
        checksum += hdr[slot * kHdr + 42];  // first CODIF byte: the frame number
        wrs[slot].next = head;
        head = &wrs[slot];
      }
      if (head) {
        ibv_recv_wr* bad = nullptr;
        ibv_post_recv(qp, head, &bad);
      }
      packets += static_cast<uint64_t>(n);
    }
  }
  const double wall = now(CLOCK_MONOTONIC) - w0, cpu = now(CLOCK_THREAD_CPUTIME_ID) - c0;
  printf("packets=%llu wall_s=%.2f pps=%.0f capture_cpu_ns_per_packet=%.1f (checksum %llu)\n",
         static_cast<unsigned long long>(packets), wall, static_cast<double>(packets) / wall,
         cpu * 1e9 / static_cast<double>(packets ? packets : 1),
         static_cast<unsigned long long>(checksum));
  ibv_destroy_flow(flow);
  ibv_destroy_qp(qp);
  ibv_dereg_mr(hmr);
  ibv_dereg_mr(pmr);
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  ibv_free_device_list(list);
  return 0;
}
