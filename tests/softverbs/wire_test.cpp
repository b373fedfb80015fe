// Synthetic wire mode (SOFTVERBS_DEVICES=NAME=wire): posted WRs complete with valid CODIF
// frames of the stream the flow selects; only the header SGE is written; frames the RQ had no
// room for are counted in out_of_buffer and show as gaps in the CODIF frame numbers.
// Exit 0 = pass, 1 = fail, 77 = cannot run here (no CAP_NET_RAW).
#include <arpa/inet.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

constexpr unsigned kLocalWrite = IBV_ACCESS_LOCAL_WRITE;
constexpr uint32_t kHdr = 128, kPayload = 8192, kDepth = 256;
constexpr uint32_t kGroup = 0xef110001, kSrc = 0xc0000205;  // 239.17.0.1 from 192.0.2.5
constexpr uint16_t kPort = 36001;

int failures = 0;
void expect(bool ok, const char* what) {
  if (!ok && failures++ < 10) fprintf(stderr, "FAIL: %s\n", what);
}

uint64_t le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = v << 8 | p[i];
  return v;
}

uint64_t read_oob(const std::string& root, const char* dev) {
  std::ifstream in(root + "/class/infiniband/" + dev + "/ports/1/hw_counters/out_of_buffer");
  uint64_t v = 0;
  in >> v;
  return v;
}

struct Flow {
  ibv_flow_attr attr;
  ibv_flow_spec_ipv4 ip;
  ibv_flow_spec_tcp_udp udp;
};

}  // namespace

int main() {
  const char* dev_name = "svw";
  ibv_device** list = ibv_get_device_list(nullptr);
  ibv_device* dev = nullptr;
  for (int i = 0; list && list[i]; ++i)
    if (strcmp(ibv_get_device_name(list[i]), dev_name) == 0) dev = list[i];
  if (!dev) {
    fprintf(stderr, "FAIL: no device %s (SOFTVERBS_DEVICES=%s=wire)\n", dev_name, dev_name);
    return 1;
  }
  ibv_context* ctx = ibv_open_device(dev);
  ibv_pd* pd = ibv_alloc_pd(ctx);
  ibv_cq* cq = ibv_create_cq(ctx, kDepth, nullptr, nullptr, 0);
  ibv_qp_init_attr qa{};
  qa.send_cq = qa.recv_cq = cq;
  qa.qp_type = IBV_QPT_RAW_PACKET;
  qa.cap.max_recv_wr = kDepth;
  qa.cap.max_recv_sge = 2;
  ibv_qp* qp = ibv_create_qp(pd, &qa);
  if (!qp && errno == EPERM) {
    printf("SKIP: raw QPs need CAP_NET_RAW\n");
    return 77;
  }
  std::vector<uint8_t> hdr(kDepth * kHdr, 0), pl(static_cast<size_t>(kDepth) * kPayload, 0xab);
  ibv_mr* hmr = ibv_reg_mr(pd, hdr.data(), hdr.size(), kLocalWrite);
  ibv_mr* pmr = ibv_reg_mr(pd, pl.data(), pl.size(), kLocalWrite);
  if (!qp || !hmr || !pmr) {
    fprintf(stderr, "FAIL: setup: %s\n", strerror(errno));
    return 1;
  }
  auto post = [&](uint32_t slot) {
    ibv_sge sg[2] = {{reinterpret_cast<uintptr_t>(&hdr[slot * kHdr]), kHdr, hmr->lkey},
                     {reinterpret_cast<uintptr_t>(&pl[static_cast<size_t>(slot) * kPayload]),
                      kPayload, pmr->lkey}};
    ibv_recv_wr wr{};
    wr.wr_id = slot;
    wr.sg_list = sg;
    wr.num_sge = 2;
    ibv_recv_wr* bad = nullptr;
    return ibv_post_recv(qp, &wr, &bad);
  };
  for (uint32_t i = 0; i < kDepth; ++i)
    post(i);
  ibv_qp_attr m{};
  m.qp_state = IBV_QPS_INIT;
  m.port_num = 1;
  ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PORT);
  m.qp_state = IBV_QPS_RTR;
  ibv_modify_qp(qp, &m, IBV_QP_STATE);
  const char* root = getenv("SOFTVERBS_SYSFS_ROOT");
  const uint64_t oob0 = root ? read_oob(root, dev_name) : 0;
  Flow f{};
  f.attr.type = IBV_FLOW_ATTR_NORMAL;
  f.attr.size = sizeof f;
  f.attr.num_of_specs = 2;
  f.attr.port = 1;
  f.ip.type = IBV_FLOW_SPEC_IPV4;
  f.ip.size = sizeof f.ip;
  f.ip.val.src_ip = htonl(kSrc);
  f.ip.val.dst_ip = htonl(kGroup);
  f.ip.mask.src_ip = f.ip.mask.dst_ip = 0xffffffff;
  f.udp.type = IBV_FLOW_SPEC_UDP;
  f.udp.size = sizeof f.udp;
  f.udp.val.dst_port = htons(kPort);
  f.udp.mask.dst_port = 0xffff;
  ibv_flow* flow = ibv_create_flow(qp, reinterpret_cast<ibv_flow_attr*>(&f));
  expect(flow != nullptr, "create_flow");

  const int total = 20000;
  int got = 0;
  uint64_t last = 0, gaps = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (got < total && std::chrono::steady_clock::now() < deadline) {
    ibv_wc wc[32];
    const int n = ibv_poll_cq(cq, 32, wc);
    expect(n >= 0, "poll_cq");
    for (int i = 0; i < n; ++i, ++got) {
      const auto slot = static_cast<uint32_t>(wc[i].wr_id);
      const uint8_t* h = &hdr[slot * kHdr];
      expect(wc[i].status == IBV_WC_SUCCESS, "status");
      expect(wc[i].byte_len == 14 + 20 + 8 + 64 + kPayload, "byte_len is the whole frame");
      uint32_t dst, src;
      uint16_t dport;
      memcpy(&src, h + 26, 4);
      memcpy(&dst, h + 30, 4);
      memcpy(&dport, h + 36, 2);
      expect(ntohl(dst) == kGroup && ntohl(src) == kSrc && ntohs(dport) == kPort,
             "headers of the flow's stream");
      const uint8_t* c = h + 42;
      expect((le64(c + 40) & 0xffffffff) == 0xFEEDCAFE, "CODIF sync word");
      expect(((le64(c + 24) >> 32) * 8) == kPayload, "CODIF data array length");
      const uint64_t frame = le64(c) & 0xffffffff, secs = le64(c) >> 32;
      const uint64_t fpp = le64(c + 32) / (kPayload * 8 / 16);  // samples per frame: 8 bit complex
      const uint64_t index = secs * fpp + frame;                // period of 1 s
      expect(got == 0 || index > last, "CODIF frames advance");
      if (got > 0) gaps += index - last - 1;
      last = index;
      const uint8_t* p = &pl[static_cast<size_t>(slot) * kPayload];
      expect(p[0] == 0xab && p[kPayload - 1] == 0xab, "payload SGE left as initialised");
      expect(post(slot) == 0, "repost");
    }
  }
  expect(got >= total, "every completion arrived");
  if (root) {
    const uint64_t oob = read_oob(root, dev_name) - oob0;
    expect(oob >= gaps, "frames missing from the CODIF sequence are counted in out_of_buffer");
    printf("wire: %d completions, %llu frames dropped for want of a WR, out_of_buffer +%llu\n", got,
           static_cast<unsigned long long>(gaps), static_cast<unsigned long long>(oob));
  }

  // RESET while the wire keeps completing: none of the QP's completions may survive, and the
  // QP works again after INIT/RTR with fresh WRs.
  m.qp_state = IBV_QPS_RESET;
  expect(ibv_modify_qp(qp, &m, IBV_QP_STATE) == 0, "modify to RESET");
  ibv_wc left[64];
  int stale = 0;
  for (int i = 0; i < 1000; ++i)
    stale += ibv_poll_cq(cq, 64, left);
  expect(stale == 0, "completions survived RESET");
  m.qp_state = IBV_QPS_INIT;
  expect(ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PORT) == 0, "INIT again");
  for (uint32_t i = 0; i < kDepth; ++i)
    expect(post(i) == 0, "post after RESET");
  m.qp_state = IBV_QPS_RTR;
  expect(ibv_modify_qp(qp, &m, IBV_QP_STATE) == 0, "RTR again");
  int again = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (again < static_cast<int>(kDepth) && std::chrono::steady_clock::now() < until) {
    const int n = ibv_poll_cq(cq, 64, left);
    for (int i = 0; i < n; ++i)
      expect(left[i].status == IBV_WC_SUCCESS, "status after RESET");
    again += n > 0 ? n : 0;
  }
  expect(again == static_cast<int>(kDepth), "every WR posted after RESET completed");

  ibv_destroy_flow(flow);
  ibv_destroy_qp(qp);
  ibv_dereg_mr(hmr);
  ibv_dereg_mr(pmr);
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  ibv_free_device_list(list);
  if (failures) fprintf(stderr, "%d failed checks\n", failures);
  return failures ? 1 : 0;
}
