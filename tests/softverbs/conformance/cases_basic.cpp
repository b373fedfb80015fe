// Device attributes, registration, capabilities and the QP state machine.
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "frames.hpp"
#include "harness.hpp"

namespace conf {
namespace {

bool drop_cap_net_raw() {
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (syscall(SYS_capget, &hdr, data) != 0) return false;
  const unsigned bit = 1u << (CAP_NET_RAW % 32);
  data[CAP_NET_RAW / 32].effective &= ~bit;
  data[CAP_NET_RAW / 32].permitted &= ~bit;
  data[CAP_NET_RAW / 32].inheritable &= ~bit;
  return syscall(SYS_capset, &hdr, data) == 0;
}

// Runs `body` in a child process; returns its exit code (0 = the child's checks passed).
template <class F>
int in_child(F body) {
  const pid_t pid = fork();
  if (pid == 0) _exit(body());
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 100;
}

}  // namespace

CONF_CASE(device_attributes, "device reports flow steering, raw IP csum, limits and a clock") {
  Rig rig;
  ibv_device_attr_ex a{};
  CONF_EQ(ibv_query_device_ex(rig.ctx, nullptr, &a), 0, "query_device_ex");
  CONF_CHECK(a.orig_attr.device_cap_flags & IBV_DEVICE_MANAGED_FLOW_STEERING,
             "no managed flow steering");
  CONF_CHECK(a.orig_attr.device_cap_flags & IBV_DEVICE_RAW_IP_CSUM, "no raw IP checksum");
  CONF_CHECK(a.raw_packet_caps & IBV_RAW_PACKET_CAP_IP_CSUM, "raw_packet_caps lacks IP_CSUM");
  CONF_CHECK(a.orig_attr.max_qp_wr >= 1024, "max_qp_wr too small");
  CONF_CHECK(a.orig_attr.max_cqe >= 65535, "max_cqe too small");
  CONF_CHECK(a.orig_attr.max_sge >= 2, "max_sge < 2");
  CONF_CHECK(a.hca_core_clock > 0, "hca_core_clock is 0");
  CONF_CHECK(a.completion_timestamp_mask != 0, "no completion timestamps");
  ibv_device_attr b{};
  CONF_EQ(ibv_query_device(rig.ctx, &b), 0, "query_device");
  CONF_EQ(b.max_qp_wr, a.orig_attr.max_qp_wr, "legacy and extended query agree");
  ibv_port_attr p{};
  CONF_EQ(ibv_query_port(rig.ctx, 1, &p), 0, "query_port");
  CONF_EQ(static_cast<int>(p.link_layer), IBV_LINK_LAYER_ETHERNET, "link layer");
  CONF_EQ(static_cast<int>(p.state), IBV_PORT_ACTIVE, "port state");
  CONF_CHECK(rig.ctx->num_comp_vectors >= 1, "no completion vectors");
}

CONF_CASE(rt_values_raw_clock, "query_rt_values_ex returns an advancing raw clock") {
  Rig rig;
  ibv_values_ex v1{}, v2{};
  v1.comp_mask = v2.comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
  CONF_EQ(ibv_query_rt_values_ex(rig.ctx, &v1), 0, "query_rt_values_ex");
  sleep_ms(20);
  CONF_EQ(ibv_query_rt_values_ex(rig.ctx, &v2), 0, "query_rt_values_ex");
  const uint64_t t1 = static_cast<uint64_t>(v1.raw_clock.tv_sec) * 1000000000ULL +
                      static_cast<uint64_t>(v1.raw_clock.tv_nsec);
  const uint64_t t2 = static_cast<uint64_t>(v2.raw_clock.tv_sec) * 1000000000ULL +
                      static_cast<uint64_t>(v2.raw_clock.tv_nsec);
  CONF_CHECK(t2 > t1, "raw clock did not advance");
}

CONF_CASE(dmabuf_probe, "ibv_reg_dmabuf_mr(fd=-1) answers EBADF (supported) or EOPNOTSUPP") {
  Rig rig;
  errno = 0;
  ibv_mr* mr = ibv_reg_dmabuf_mr(rig.pd, 0, 65536, 0, -1, IBV_ACCESS_LOCAL_WRITE);
  const int e = errno;
  CONF_CHECK(mr == nullptr, "registered fd -1");
  const std::string& want = options().dmabuf;
  if (want == "ebadf")
    CONF_EQ(e, EBADF, "dma-buf configured as supported");
  else if (want == "eopnotsupp")
    CONF_EQ(e, EOPNOTSUPP, "dma-buf configured as unsupported");
  else
    CONF_CHECK(e == EBADF || e == EOPNOTSUPP, std::string("errno ") + strerror(e));
}

CONF_CASE(device_pointer_efault, "registering memory that is not host-mapped fails with EFAULT") {
  Rig rig;
  const size_t len = 1 << 20;
  // Reserved but inaccessible address space: what a CUDA device pointer looks like to the
  // host without a peer-memory client.
  void* p = mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  CONF_CHECK(p != MAP_FAILED, strerror(errno));
  errno = 0;
  ibv_mr* mr = ibv_reg_mr(rig.pd, p, len, kLocalWrite);
  const int e1 = errno;
  if (mr) ibv_dereg_mr(mr);
  munmap(p, len);
  CONF_CHECK(mr == nullptr, "PROT_NONE range registered");
  CONF_EQ(e1, EFAULT, "errno for PROT_NONE range");
  errno = 0;
  mr = ibv_reg_mr_iova2(rig.pd, p, len, 0, kLocalWrite);  // now unmapped
  const int e2 = errno;
  if (mr) ibv_dereg_mr(mr);
  CONF_CHECK(mr == nullptr, "unmapped range registered (ibv_reg_mr_iova2)");
  CONF_EQ(e2, EFAULT, "errno for unmapped range");
}

CONF_CASE(eperm_without_cap_net_raw, "raw QPs and flows need CAP_NET_RAW (EPERM)") {
  const int rc = in_child([]() -> int {
    ibv_device* dev = find_device(options().dev);
    ibv_context* ctx = dev ? ibv_open_device(dev) : nullptr;
    if (!ctx) return 10;
    ibv_pd* pd = ibv_alloc_pd(ctx);
    ibv_cq* cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
    if (!pd || !cq) return 11;
    ibv_qp_init_attr a{};
    a.send_cq = a.recv_cq = cq;
    a.qp_type = IBV_QPT_RAW_PACKET;
    a.cap.max_recv_wr = 4;
    a.cap.max_recv_sge = 1;
    ibv_qp* qp = ibv_create_qp(pd, &a);  // still privileged
    if (!qp) return 12;
    ibv_qp_attr m{};
    m.qp_state = IBV_QPS_INIT;
    m.port_num = 1;
    if (ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PORT)) return 13;
    if (!drop_cap_net_raw()) return 14;
    errno = 0;
    ibv_qp* qp2 = ibv_create_qp(pd, &a);
    if (qp2 || errno != EPERM) return 15;
    FlowRule r = flow_rule(stream(1));
    errno = 0;
    ibv_flow* f = ibv_create_flow(qp, reinterpret_cast<ibv_flow_attr*>(&r));
    if (f || errno != EPERM) return 16;
    return 0;
  });
  CONF_CHECK(rc != 15, "create_qp without CAP_NET_RAW did not fail with EPERM");
  CONF_CHECK(rc != 16, "create_flow without CAP_NET_RAW did not fail with EPERM");
  CONF_EQ(rc, 0, "child setup step failed (10..14)");
}

CONF_CASE(qp_state_machine, "RESET->INIT needs the port; illegal transitions are EINVAL") {
  Rig rig({.to_rtr = false});
  ibv_qp* q = rig.add_qp(8, 1, false);
  to_state(q, IBV_QPS_RESET);
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  CONF_EQ(ibv_modify_qp(q, &a, IBV_QP_STATE), EINVAL, "RESET -> RTR");
  a.qp_state = IBV_QPS_INIT;
  CONF_EQ(ibv_modify_qp(q, &a, IBV_QP_STATE), EINVAL, "RESET -> INIT without IBV_QP_PORT");
  to_state(q, IBV_QPS_INIT);
  to_state(q, IBV_QPS_RTR);
  ibv_qp_attr qa{};
  ibv_qp_init_attr qi{};
  CONF_EQ(ibv_query_qp(q, &qa, IBV_QP_STATE | IBV_QP_CAP, &qi), 0, "query_qp");
  CONF_EQ(static_cast<int>(qa.qp_state), IBV_QPS_RTR, "state after RTR");
  CONF_CHECK(qa.cap.max_recv_wr >= 8, "max_recv_wr shrank");
  to_state(q, IBV_QPS_RTS);
  to_state(q, IBV_QPS_ERR);
  to_state(q, IBV_QPS_RESET);
}

}  // namespace conf
