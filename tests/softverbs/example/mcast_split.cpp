// Receives UDP multicast through a raw packet QP with a header/payload split: SGE0 takes the
// Ethernet+IPv4+UDP headers, SGE1 the UDP payload, in separate buffers. Works with any
// libibverbs provider (softverbs or mlx5). Payload bytes are checked against the pattern the
// test sender writes: a 4-byte big-endian sequence number, then byte i = (seq + i) & 0xff.
// Usage: softverbs_mcast_example DEV IFNAME SRC_IP GROUP PORT COUNT PAYLOAD_BYTES
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr uint32_t kSplit = 42;                           // Ethernet 14 + IPv4 20 + UDP 8
constexpr unsigned kLocalWrite = IBV_ACCESS_LOCAL_WRITE;  // ibv_reg_mr's macro mixes enums

struct Args {
  const char* dev;
  const char* ifname;
  uint32_t src;    // network order
  uint32_t group;  // network order
  uint16_t port;
  int count;
  uint32_t payload;
};

[[noreturn]] void die(const char* what) {
  fprintf(stderr, "mcast_split: %s: %s\n", what, strerror(errno));
  exit(1);
}

struct Flow {
  ibv_flow_attr attr;
  ibv_flow_spec_eth eth;
  ibv_flow_spec_ipv4 ip;
  ibv_flow_spec_tcp_udp udp;
};

Flow make_flow(const Args& a) {
  Flow f{};
  f.attr.type = IBV_FLOW_ATTR_NORMAL;
  f.attr.size = sizeof f;
  f.attr.num_of_specs = 3;
  f.attr.port = 1;
  f.eth.type = IBV_FLOW_SPEC_ETH;
  f.eth.size = sizeof f.eth;
  const uint32_t g = ntohl(a.group);
  const uint8_t mac[6] = {0x01,
                          0x00,
                          0x5e,
                          static_cast<uint8_t>((g >> 16) & 0x7f),
                          static_cast<uint8_t>(g >> 8),
                          static_cast<uint8_t>(g)};
  memcpy(f.eth.val.dst_mac, mac, 6);
  memset(f.eth.mask.dst_mac, 0xff, 6);
  f.ip.type = IBV_FLOW_SPEC_IPV4;
  f.ip.size = sizeof f.ip;
  f.ip.val.src_ip = a.src;
  f.ip.val.dst_ip = a.group;
  f.ip.mask.src_ip = f.ip.mask.dst_ip = 0xffffffff;
  f.udp.type = IBV_FLOW_SPEC_UDP;
  f.udp.size = sizeof f.udp;
  f.udp.val.dst_port = htons(a.port);
  f.udp.mask.dst_port = 0xffff;
  return f;
}

bool check(const Args& a, const uint8_t* hdr, const uint8_t* pl, uint32_t byte_len) {
  if (byte_len != kSplit + a.payload) return false;
  uint32_t dst;
  uint16_t dport, ulen;
  memcpy(&dst, hdr + 30, 4);
  memcpy(&dport, hdr + 36, 2);
  memcpy(&ulen, hdr + 38, 2);
  if (hdr[12] != 0x08 || hdr[13] != 0x00 || dst != a.group || ntohs(dport) != a.port ||
      ntohs(ulen) != 8 + a.payload)
    return false;
  uint32_t seq;
  memcpy(&seq, pl, 4);
  seq = ntohl(seq);
  for (uint32_t i = 4; i < a.payload; ++i)
    if (pl[i] != static_cast<uint8_t>(seq + i)) return false;
  return true;
}

int join_group(const Args& a) {
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) die("socket");
  ip_mreqn m{};
  m.imr_multiaddr.s_addr = a.group;
  m.imr_ifindex = static_cast<int>(if_nametoindex(a.ifname));
  if (setsockopt(s, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof m) != 0) die("IP_ADD_MEMBERSHIP");
  return s;
}

// The verbs objects of the receiver: one raw QP whose WRs point at a header slot (SGE0, the
// split point) and a payload slot (SGE1) in two separate buffers.
struct Receiver {
  ibv_device** list = nullptr;
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  ibv_qp* qp = nullptr;
  ibv_mr* hmr = nullptr;
  ibv_mr* pmr = nullptr;
  ibv_flow* flow = nullptr;
  std::vector<uint8_t> headers, payloads;

  void open(const Args& a) {
    int n = 0;
    list = ibv_get_device_list(&n);
    for (int i = 0; i < n; ++i)
      if (strcmp(ibv_get_device_name(list[i]), a.dev) == 0) ctx = ibv_open_device(list[i]);
    pd = ctx ? ibv_alloc_pd(ctx) : nullptr;
    cq = pd ? ibv_create_cq(ctx, a.count, nullptr, nullptr, 0) : nullptr;
    if (!cq) die("device/pd/cq");
    ibv_qp_init_attr qa{};
    qa.send_cq = qa.recv_cq = cq;
    qa.qp_type = IBV_QPT_RAW_PACKET;
    qa.cap.max_recv_wr = static_cast<uint32_t>(a.count);
    qa.cap.max_recv_sge = 2;
    qp = ibv_create_qp(pd, &qa);
    if (!qp) die("create_qp");
    headers.resize(static_cast<size_t>(a.count) * 64);
    payloads.resize(static_cast<size_t>(a.count) * a.payload);
    hmr = ibv_reg_mr(pd, headers.data(), headers.size(), kLocalWrite);
    pmr = ibv_reg_mr(pd, payloads.data(), payloads.size(), kLocalWrite);
    if (!hmr || !pmr) die("reg_mr");
  }

  void post(const Args& a, int slot) {
    const auto i = static_cast<size_t>(slot);
    ibv_sge sg[2] = {{reinterpret_cast<uintptr_t>(&headers[i * 64]), kSplit, hmr->lkey},
                     {reinterpret_cast<uintptr_t>(&payloads[i * a.payload]), a.payload, pmr->lkey}};
    ibv_recv_wr wr{};
    wr.wr_id = i;
    wr.sg_list = sg;
    wr.num_sge = 2;
    ibv_recv_wr* bad = nullptr;
    if (ibv_post_recv(qp, &wr, &bad)) die("post_recv");
  }

  // RESET -> INIT, post every slot, -> RTR: libmlx5 refuses receive WRs in RESET (EINVAL) and
  // arms those posted in INIT at RTR.
  void start(const Args& a) {
    ibv_qp_attr m{};
    m.qp_state = IBV_QPS_INIT;
    m.port_num = 1;
    if (ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PORT)) die("INIT");
    for (int i = 0; i < a.count; ++i)
      post(a, i);
    m.qp_state = IBV_QPS_RTR;
    if (ibv_modify_qp(qp, &m, IBV_QP_STATE)) die("RTR");
    Flow f = make_flow(a);
    flow = ibv_create_flow(qp, reinterpret_cast<ibv_flow_attr*>(&f));
    if (!flow) die("create_flow");
  }

  // Polls until `count` completions or 10 s; returns how many were intact.
  int receive(const Args& a, int& got) {
    int ok = 0;
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (got < a.count && std::chrono::steady_clock::now() < end) {
      ibv_wc wc[16];
      const int k = ibv_poll_cq(cq, 16, wc);
      if (k < 0) die("poll_cq");
      for (int i = 0; i < k; ++i, ++got) {
        const size_t slot = wc[i].wr_id;
        // A kernel UDP sender's datagrams carry correct checksums on the wire.
        ok += wc[i].status == IBV_WC_SUCCESS && (wc[i].wc_flags & IBV_WC_IP_CSUM_OK) &&
              check(a, &headers[slot * 64], &payloads[slot * a.payload], wc[i].byte_len);
      }
      if (k == 0) usleep(1000);
    }
    return ok;
  }

  ~Receiver() {
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

}  // namespace

int main(int argc, char** argv) {
  if (argc != 8) {
    fprintf(stderr, "usage: %s DEV IFNAME SRC_IP GROUP PORT COUNT PAYLOAD\n", argv[0]);
    return 2;
  }
  const Args a{argv[1],
               argv[2],
               inet_addr(argv[3]),
               inet_addr(argv[4]),
               static_cast<uint16_t>(atoi(argv[5])),
               atoi(argv[6]),
               static_cast<uint32_t>(atoi(argv[7]))};
  Receiver r;
  r.open(a);
  r.start(a);
  const int member = join_group(a);  // after RTR, kept open for the run
  printf("ready\n");
  fflush(stdout);
  int got = 0;
  const int ok = r.receive(a, got);
  printf("received=%d ok=%d split=%u payload=%u\n", got, ok, kSplit, a.payload);
  close(member);
  return got == a.count && ok == a.count ? 0 : 1;
}
