// softverbs' test knobs, through the public verbs API on the synthetic wire (svw=wire):
//   fault_test error    with SOFTVERBS_INJECT_WC_ERROR=after=100,status=loc_prot: the 100th
//                       frame's WR completes with IBV_WC_LOC_PROT_ERR (vendor_err 0x52), the QP
//                       is in ERR, every other posted WR is flushed in posting order, a WR
//                       posted now is flushed too, nothing else completes until RESET, and
//                       after RESET -> INIT -> RTR frames arrive again (with a gap).
//   fault_test clock K  with SOFTVERBS_CLOCK=K (wallclock|raw|none): what query_device_ex,
//                       ibv_create_cq_ex and ibv_query_rt_values_ex offer, and that raw ticks
//                       advance at hca_core_clock.
// Not conformance cases: real devices have no such knobs. Exit 0 pass, 1 fail, 77 no CAP_NET_RAW.
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "wire_rig.hpp"

namespace {

using namespace wire_rig;
constexpr uint32_t kAfter = 100;

struct Flow {
  ibv_flow_attr attr;
  ibv_flow_spec_ipv4 ip;
};

int injected_error() {
  Rig rig;
  if (int rc = rig.open_qp(2 * kDepth)) return rc;
  rig.arm();
  Flow f{};
  f.attr.type = IBV_FLOW_ATTR_NORMAL;
  f.attr.size = sizeof f;
  f.attr.num_of_specs = 1;
  f.attr.port = 1;
  f.ip.type = IBV_FLOW_SPEC_IPV4;
  f.ip.size = sizeof f.ip;
  f.ip.val.dst_ip = htonl(0xef110001);
  f.ip.mask.dst_ip = 0xffffffff;
  rig.flow = ibv_create_flow(rig.qp, &f.attr);
  expect(rig.flow != nullptr, "create_flow");
  // Nothing re-posted: the 256 WRs complete as 99 frames, the error, 156 flushes.
  const std::vector<ibv_wc> wc = rig.poll(kDepth, 10000);
  expect(wc.size() == kDepth, "every posted WR completed");
  for (std::size_t i = 0; i < wc.size(); ++i) {
    expect(wc[i].wr_id == i, "completions in posting order");
    if (i + 1 < kAfter) {
      expect(wc[i].status == IBV_WC_SUCCESS, "frames before the injected error");
    } else if (i + 1 == kAfter) {
      expect(wc[i].status == IBV_WC_LOC_PROT_ERR, "the 100th frame's WR fails: LOC_PROT_ERR");
      expect(wc[i].vendor_err == 0x52, "vendor_err 0x52");
    } else {
      expect(wc[i].status == IBV_WC_WR_FLUSH_ERR, "the other WRs are flushed");
    }
  }
  expect(rig.state() == IBV_QPS_ERR, "the QP is in ERR");
  expect(rig.post(0) == 0, "post_recv to a QP in ERR");
  std::vector<ibv_wc> more = rig.poll(2, 300);
  expect(more.size() == 1 && more[0].status == IBV_WC_WR_FLUSH_ERR,
         "a WR posted in ERR is flushed, and nothing is received");
  expect(rig.to(IBV_QPS_RESET), "RESET");
  rig.arm();
  more = rig.poll(kDepth, 10000);
  expect(more.size() == kDepth, "the QP receives again after RESET -> INIT -> RTR");
  int ok = 0;
  for (const ibv_wc& w : more)
    ok += w.status == IBV_WC_SUCCESS;
  expect(ok == static_cast<int>(kDepth), "after=N without every fails once only");
  return failures ? 1 : 0;
}

int clock_kind(const std::string& kind) {
  Rig rig;
  if (!rig.open_device()) return 1;
  ibv_device_attr_ex dev{};
  expect(ibv_query_device_ex(rig.ctx, nullptr, &dev) == 0, "query_device_ex");
  const bool any = kind != "none";
  expect((dev.completion_timestamp_mask != 0) == any, "completion_timestamp_mask");
  expect(dev.hca_core_clock == (any ? 156250u : 0u), "hca_core_clock (kHz)");
  auto cq_with = [&](uint64_t flags) {
    ibv_cq_init_attr_ex a{};
    a.cqe = 16;
    a.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | flags;
    ibv_cq_ex* cq = ibv_create_cq_ex(rig.ctx, &a);
    const int err = cq ? 0 : errno;
    if (cq) ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
    return err;
  };
  expect(cq_with(IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK) ==
             (kind == "wallclock" ? 0 : EOPNOTSUPP),
         "WALLCLOCK only with a real-time clock (else EOPNOTSUPP)");
  expect(cq_with(IBV_WC_EX_WITH_COMPLETION_TIMESTAMP) == (any ? 0 : EOPNOTSUPP),
         "raw completion timestamps with any clock");
  ibv_values_ex v0{}, v1{};
  v0.comp_mask = v1.comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
  const int rc = ibv_query_rt_values_ex(rig.ctx, &v0);
  expect(rc == (any ? 0 : EOPNOTSUPP), "query_rt_values_ex");
  if (any && rc == 0) {
    usleep(200000);
    expect(ibv_query_rt_values_ex(rig.ctx, &v1) == 0, "query_rt_values_ex again");
    const double ticks = static_cast<double>(v1.raw_clock.tv_nsec - v0.raw_clock.tv_nsec);
    // 0.2 s at 156.25 MHz, allowing for a descheduled test thread.
    expect(ticks > 0.19 * 156.25e6 && ticks < 0.5 * 156.25e6, "raw ticks advance at 156.25 MHz");
  }
  return failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "error") return injected_error();
  if (mode == "clock" && argc > 2) return clock_kind(argv[2]);
  fprintf(stderr, "usage: %s error | clock wallclock|raw|none\n", argv[0]);
  return 2;
}
