// Flow rules and the kernel stack: on mlx5 a frame a NORMAL rule matches goes to the QP and not
// to the kernel; a DONT_TRAP rule's QP "will receive traffic, but will not steal it" (kernel
// commit a3100a787941, IB/core: Add don't trap flag to flow creation; rdma-core
// libibverbs/man/ibv_create_flow.3). Watched with a kernel UDP socket joined to the group on the
// device's own netdev (--dev-if). softverbs models this only with SOFTVERBS_TRAP=nft.
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "frames.hpp"
#include "harness.hpp"

namespace conf {
namespace {

// A kernel UDP socket bound to the stream's port and joined to its group on `ifname`.
class KernelSocket {
 public:
  KernelSocket(const std::string& ifname, const Stream& s) : fd_(socket(AF_INET, SOCK_DGRAM, 0)) {
    CONF_CHECK(fd_ >= 0, std::string("socket: ") + strerror(errno));
    const int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(s.dport);
    a.sin_addr.s_addr = htonl(s.group);
    CONF_CHECK(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0,
               std::string("bind: ") + strerror(errno));
    ip_mreqn m{};
    m.imr_multiaddr.s_addr = htonl(s.group);
    m.imr_ifindex = static_cast<int>(if_nametoindex(ifname.c_str()));
    CONF_CHECK(m.imr_ifindex > 0, "no interface " + ifname);
    CONF_CHECK(setsockopt(fd_, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof m) == 0,
               std::string("IP_ADD_MEMBERSHIP: ") + strerror(errno));
  }
  ~KernelSocket() { close(fd_); }
  KernelSocket(const KernelSocket&) = delete;
  KernelSocket& operator=(const KernelSocket&) = delete;

  // Datagrams that arrive until none has for `quiet_ms`.
  size_t count(int quiet_ms) {
    size_t n = 0;
    pollfd p{fd_, POLLIN, 0};
    char buf[2048];
    while (poll(&p, 1, quiet_ms) > 0)
      n += recv(fd_, buf, sizeof buf, MSG_DONTWAIT) > 0;
    return n;
  }

 private:
  int fd_;
};

size_t on_qp(const std::vector<ibv_wc>& wc, const ibv_qp* q) {
  size_t n = 0;
  for (const auto& w : wc)
    n += w.qp_num == q->qp_num && w.status == IBV_WC_SUCCESS;
  return n;
}

ibv_flow* add(Rig& rig, const Stream& s, uint32_t flags) {
  FlowRule r = flow_rule(s, 0, flags);
  return rig.add_flow(rig.qp, reinterpret_cast<ibv_flow_attr*>(&r));
}

}  // namespace

CONF_CASE(flow_traps_from_kernel,
          "a trapping rule takes matching frames from the kernel stack; DONT_TRAP and "
          "ibv_destroy_flow give them back") {
  if (options().dev_if.empty()) skip("no --dev-if: no kernel socket to watch");
  if (getenv("SOFTVERBS_DEVICES") && !getenv("SOFTVERBS_TRAP"))
    skip("softverbs models trapping only with SOFTVERBS_TRAP=nft");
  Rig rig({.recv_sge = 1});
  const Stream s = stream(26);
  KernelSocket kernel(options().dev_if, s);
  Sender tx(options().tx_if);
  tx.send(udp_frame(s, 1, 100));
  CONF_EQ(kernel.count(500), size_t{1}, "the kernel socket before any rule (the rig works)");

  ibv_flow* trap = add(rig, s, 0);
  rig.post_n(rig.qp, 8, 0, 2048);
  tx.send(udp_frame(s, 2, 100));
  tx.send(udp_frame(s, 3, 100));
  CONF_EQ(on_qp(collect(rig.cq, 2), rig.qp), size_t{2}, "the QP of the trapping rule");
  CONF_EQ(kernel.count(300), size_t{0}, "the kernel socket while a trapping rule matches");

  rig.destroy_flow(trap);
  ibv_flow* copy = add(rig, s, IBV_FLOW_ATTR_FLAGS_DONT_TRAP);
  tx.send(udp_frame(s, 4, 100));
  CONF_EQ(on_qp(collect(rig.cq, 1), rig.qp), size_t{1}, "the QP of the DONT_TRAP rule");
  CONF_EQ(kernel.count(500), size_t{1}, "the kernel socket beside a DONT_TRAP rule");

  rig.destroy_flow(copy);
  tx.send(udp_frame(s, 5, 100));
  CONF_EQ(kernel.count(500), size_t{1}, "the kernel socket after ibv_destroy_flow");
}

}  // namespace conf
