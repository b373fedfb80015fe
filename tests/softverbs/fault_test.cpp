// softverbs' test knobs, through the public verbs API on the synthetic wire (svw=wire):
//   fault_test error    with SOFTVERBS_INJECT_WC_ERROR=after=100,status=loc_prot: the 100th
//                       frame's WR completes with IBV_WC_LOC_PROT_ERR (vendor_err 0x52), the QP
//                       is in ERR, every other posted WR is flushed in posting order, a WR
//                       posted now is flushed too, nothing else completes until RESET, and
//                       after RESET -> INIT -> RTR frames arrive again (with a gap).
//   fault_test clock K  with SOFTVERBS_CLOCK=K (wallclock|realtime|raw|none): what
//                       query_device_ex, ibv_create_cq_ex and ibv_query_rt_values_ex offer, and
//                       that raw ticks advance at hca_core_clock.
//   fault_test phc tai  with SOFTVERBS_CLOCK=wallclock,tai,ppm=50000: WALLCLOCK values are the
//                       PHC, 37 s ahead of CLOCK_REALTIME, and gain 50 ms per second.
//   fault_test phc realtime  with SOFTVERBS_CLOCK=realtime,tai: WALLCLOCK alone reads
//                       seconds << 32 | ns (37 s ahead); with COMPLETION_TIMESTAMP too, ns.
//   fault_test cq       with SOFTVERBS_MAX_CQE=1023: max_cqe, and CQ sizes rounded to
//                       2^k - 1 and refused (EINVAL) beyond it after rounding.
//   fault_test overrun  with SOFTVERBS_INJECT_CQ_OVERRUN=after=50: the 50th completion
//                       overruns the CQ: IBV_EVENT_CQ_ERR names it, the 49 before it are still
//                       polled, nothing after.
//   fault_test ebusy v44|fixed  with SOFTVERBS_INJECT_CLOCK_EBUSY=every=10[,rdma_core=fixed]
//                       on a WALLCLOCK CQ: v44 (Debian 12's libmlx5) loses the completion of
//                       each EBUSY; a single-threaded CQ polls on, a locked one would hang at
//                       its next ibv_start_poll (softverbs aborts there, saying so); fixed
//                       (after v64) loses nothing.
//   fault_test qpfatal  with SOFTVERBS_INJECT_QP_FATAL=after=100: the 100th frame raises
//                       IBV_EVENT_QP_FATAL naming the QP, whose WRs are all flushed; the kernel
//                       still believes RTR, so ibv_modify_qp fails (EINVAL) until ibv_query_qp
//                       has read the error state; then RESET -> INIT -> RTR receives again.
// Not conformance cases: real devices have no such knobs. Exit 0 pass, 1 fail, 77 no CAP_NET_RAW.
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
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

bool add_flow(Rig& rig) {
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
  return rig.flow != nullptr;
}

int injected_error() {
  Rig rig;
  if (int rc = rig.open_qp(2 * kDepth)) return rc;
  rig.arm();
  add_flow(rig);
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
  const bool wall = kind == "wallclock" || kind == "realtime";
  expect(cq_with(IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK) == (wall ? 0 : EOPNOTSUPP),
         "WALLCLOCK only with a clock-info page or a real-time clock (else EOPNOTSUPP)");
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

// Like Rig::open_qp with an extended CQ asking for `flags`; the Rig owns and destroys it.
int open_qp_ex(Rig& rig, uint64_t flags, ibv_cq_ex*& cqx) {
  if (!rig.open_device()) return 1;
  ibv_cq_init_attr_ex a{};
  a.cqe = kDepth;
  a.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | flags;
  cqx = ibv_create_cq_ex(rig.ctx, &a);
  if (!cqx) return fprintf(stderr, "FAIL: create_cq_ex: %s\n", strerror(errno)), 1;
  rig.cq = ibv_cq_ex_to_cq(cqx);
  ibv_qp_init_attr qa{};
  qa.send_cq = qa.recv_cq = rig.cq;
  qa.qp_type = IBV_QPT_RAW_PACKET;
  qa.cap.max_recv_wr = kDepth;
  qa.cap.max_recv_sge = 2;
  rig.qp = ibv_create_qp(rig.pd, &qa);
  if (!rig.qp && errno == EPERM) return printf("SKIP: raw QPs need CAP_NET_RAW\n"), 77;
  rig.hmr = ibv_reg_mr(rig.pd, rig.hdr.data(), rig.hdr.size(), kLocalWrite);
  rig.pmr = ibv_reg_mr(rig.pd, rig.pl.data(), rig.pl.size(), kLocalWrite);
  if (!rig.qp || !rig.hmr || !rig.pmr) return fprintf(stderr, "FAIL: setup\n"), 1;
  rig.arm();
  return add_flow(rig) ? 0 : 1;
}

uint64_t host_ns() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000000ULL + static_cast<uint64_t>(t.tv_nsec);
}

// The wallclock value of the next completion and the host time right after it was found;
// every other completion already queued is consumed too.
bool next_wallclock(ibv_cq_ex* cq, uint64_t& v, uint64_t& host) {
  for (int i = 0; i < 50000; ++i) {
    ibv_poll_cq_attr pa{};
    if (ibv_start_poll(cq, &pa) != 0) {
      usleep(100);
      continue;
    }
    host = host_ns();
    v = ibv_wc_read_completion_wallclock_ns(cq);
    while (ibv_next_poll(cq) == 0) {
    }
    ibv_end_poll(cq);
    return true;
  }
  expect(false, "a completion within 5 s");
  return false;
}

constexpr double kTaiNs = 37e9;

// PHC minus host time of one frame at a time, the least late of 20 (a loaded host may leave a
// completion unpolled for milliseconds); `host` gets that sample's host time.
double least_late_offset(Rig& rig, ibv_cq_ex* cq, double& host) {
  double best = -1e30;
  for (uint32_t i = 0; i < 20; ++i) {
    uint64_t v = 0, h = 0;
    expect(rig.post(i) == 0, "post_recv");
    if (!next_wallclock(cq, v, h)) break;
    const double off = static_cast<double>(v) - static_cast<double>(h);
    if (off > best) {
      best = off;
      host = static_cast<double>(h);
    }
  }
  return best;
}

int phc(const std::string& kind) {
  if (kind == "tai") {                                 // SOFTVERBS_CLOCK=wallclock,tai,ppm=50000
    const double t0 = static_cast<double>(host_ns());  // before softverbs' first clock read
    Rig rig;
    ibv_cq_ex* cq = nullptr;
    if (int rc = open_qp_ex(rig, IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK, cq)) return rc;
    uint64_t v = 0, h = 0;
    if (!next_wallclock(cq, v, h)) return 1;  // the WRs filled at once: drained
    double h1 = 0, h2 = 0;
    const double off1 = least_late_offset(rig, cq, h1);
    // 37 s, plus what the PHC gained since softverbs first read it (after t0).
    expect(off1 > kTaiNs - 50e6 && off1 < kTaiNs + (h1 - t0) * 0.05 + 50e6,
           "WALLCLOCK is the PHC: 37 s ahead (TAI)");
    usleep(2000000);
    const double gain = least_late_offset(rig, cq, h2) - off1;
    const double want = (h2 - h1) * 0.05;  // 50000 ppm
    if (gain < want - 10e6 || gain > want + 10e6)
      fprintf(stderr, "PHC gained %.0f ns over %.0f ns, expected %.0f\n", gain, h2 - h1, want);
    expect(gain > want - 10e6 && gain < want + 10e6, "the PHC drifts by ppm=50000");
  } else if (kind == "realtime") {  // SOFTVERBS_CLOCK=realtime,tai
    for (const bool with_ts : {false, true}) {
      Rig rig;
      ibv_cq_ex* cq = nullptr;
      const uint64_t flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK |
                             (with_ts ? uint64_t{IBV_WC_EX_WITH_COMPLETION_TIMESTAMP} : 0);
      if (int rc = open_qp_ex(rig, flags, cq)) return rc;
      uint64_t v = 0, h = 0;
      if (!next_wallclock(cq, v, h)) return 1;
      const uint64_t ns = with_ts ? v : (v >> 32) * 1000000000ULL + (v & 0xffffffffULL);
      const double off = static_cast<double>(ns) - static_cast<double>(h);
      if (!with_ts) expect((v & 0xffffffffULL) < 1000000000ULL, "low word: nanoseconds");
      expect(off > kTaiNs - 50e6 && off < kTaiNs + 50e6,
             with_ts ? "with COMPLETION_TIMESTAMP too: PHC ns (clock-info conversion)"
                     : "WALLCLOCK alone: seconds << 32 | ns of the PHC");
    }
  } else {
    return fprintf(stderr, "phc tai|realtime\n"), 2;
  }
  return failures ? 1 : 0;
}

int cq_sizes() {  // SOFTVERBS_MAX_CQE=1023
  Rig rig;
  if (!rig.open_device()) return 1;
  ibv_device_attr a{};
  expect(ibv_query_device(rig.ctx, &a) == 0 && a.max_cqe == 1023, "max_cqe from the knob");
  auto entries = [&](int n) {
    ibv_cq* cq = ibv_create_cq(rig.ctx, n, nullptr, nullptr, 0);
    const int got = cq ? cq->cqe : -errno;
    if (cq) ibv_destroy_cq(cq);
    return got;
  };
  expect(entries(5) == 7, "5 -> 7 (2^3 - 1)");
  expect(entries(511) == 511, "511 fits exactly");
  expect(entries(512) == 1023, "512 -> 1023");
  expect(entries(1023) == 1023, "max_cqe itself");
  expect(entries(1024) == -EINVAL, "1024 needs 2047 > max_cqe: EINVAL");
  return failures ? 1 : 0;
}

int overrun() {  // SOFTVERBS_INJECT_CQ_OVERRUN=after=50
  Rig rig;
  if (int rc = rig.open_qp(kDepth)) return rc;
  rig.arm();
  add_flow(rig);
  pollfd p{rig.ctx->async_fd, POLLIN, 0};
  expect(poll(&p, 1, 5000) == 1, "an async event within 5 s");
  ibv_async_event ev{};
  expect(ibv_get_async_event(rig.ctx, &ev) == 0, "get_async_event");
  expect(ev.event_type == IBV_EVENT_CQ_ERR, "IBV_EVENT_CQ_ERR");
  expect(ev.element.cq == rig.cq, "the event names the CQ");
  ibv_ack_async_event(&ev);
  const std::vector<ibv_wc> wc = rig.poll(kDepth, 500);
  expect(wc.size() == 49, "the 49 completions before the overrun are still polled");
  for (std::size_t i = 0; i < wc.size(); ++i)
    expect(wc[i].status == IBV_WC_SUCCESS && wc[i].wr_id == i, "in order, successful");
  expect(rig.post(0) == 0, "post_recv");
  expect(rig.poll(1, 300).empty(), "nothing completes on an overrun CQ");
  return failures ? 1 : 0;
}

// A CQ with WALLCLOCK (single-threaded or not) on the wire, the WRs posted and filled at once.
int open_wallclock(Rig& rig, bool single_threaded, ibv_cq_ex*& cq) {
  if (!rig.open_device()) return 1;
  ibv_cq_init_attr_ex a{};
  a.cqe = kDepth;
  a.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;
  if (single_threaded) {
    a.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
    a.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
  }
  cq = ibv_create_cq_ex(rig.ctx, &a);
  if (!cq) return fprintf(stderr, "FAIL: create_cq_ex: %s\n", strerror(errno)), 1;
  rig.cq = ibv_cq_ex_to_cq(cq);
  ibv_qp_init_attr qa{};
  qa.send_cq = qa.recv_cq = rig.cq;
  qa.qp_type = IBV_QPT_RAW_PACKET;
  qa.cap.max_recv_wr = kDepth;
  qa.cap.max_recv_sge = 2;
  rig.qp = ibv_create_qp(rig.pd, &qa);
  if (!rig.qp && errno == EPERM) return printf("SKIP: raw QPs need CAP_NET_RAW\n"), 77;
  rig.hmr = ibv_reg_mr(rig.pd, rig.hdr.data(), rig.hdr.size(), kLocalWrite);
  rig.pmr = ibv_reg_mr(rig.pd, rig.pl.data(), rig.pl.size(), kLocalWrite);
  if (!rig.qp || !rig.hmr || !rig.pmr) return fprintf(stderr, "FAIL: setup\n"), 1;
  rig.arm();
  return add_flow(rig) ? 0 : 1;
}

// Polls `cq` for 2 s, one completion per ibv_start_poll (so that every completion meets the
// injection's count): completions seen and EBUSY answers.
void poll_wallclock(ibv_cq_ex* cq, uint32_t& got, uint32_t& busy) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < end) {
    ibv_poll_cq_attr pa{};
    const int rc = ibv_start_poll(cq, &pa);
    if (rc == EBUSY) {
      ++busy;
      continue;
    }
    if (rc != 0) continue;
    ++got;
    ibv_end_poll(cq);
  }
}

// SOFTVERBS_INJECT_CLOCK_EBUSY=every=10 (v44) or every=10,rdma_core=fixed.
int ebusy(const std::string& flow) {
  if (flow != "v44" && flow != "fixed") return fprintf(stderr, "ebusy v44|fixed\n"), 2;
  {
    Rig rig;
    ibv_cq_ex* cq = nullptr;
    if (int rc = open_wallclock(rig, true, cq)) return rc;
    uint32_t got = 0, busy = 0;
    poll_wallclock(cq, got, busy);
    expect(busy > 0, "EBUSY from ibv_start_poll");
    if (flow == "v44")
      expect(got + busy == kDepth, "each EBUSY lost its completion (v44: consumed before)");
    else
      expect(got == kDepth, "every completion still polled (fixed: nothing consumed)");
    printf("single-threaded CQ: %u completions, %u EBUSY\n", got, busy);
  }
  if (flow == "fixed") return failures ? 1 : 0;
  // A locked CQ: the EBUSY left libmlx5's lock held; the next start_poll would spin forever.
  fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    Rig rig;
    ibv_cq_ex* cq = nullptr;
    if (open_wallclock(rig, false, cq) != 0) _exit(3);
    uint32_t got = 0, busy = 0;
    poll_wallclock(cq, got, busy);
    _exit(0);  // not reached: softverbs aborts in the start_poll after the first EBUSY
  }
  int status = 0;
  waitpid(child, &status, 0);
  expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
         "a locked CQ aborts at the next ibv_start_poll after EBUSY (libmlx5 < v53 hangs)");
  return failures ? 1 : 0;
}

// SOFTVERBS_INJECT_QP_FATAL=after=100.
int qp_fatal() {
  Rig rig;
  if (int rc = rig.open_qp(2 * kDepth)) return rc;
  rig.arm();
  add_flow(rig);
  pollfd p{rig.ctx->async_fd, POLLIN, 0};
  expect(poll(&p, 1, 5000) == 1, "an async event within 5 s");
  ibv_async_event ev{};
  expect(ibv_get_async_event(rig.ctx, &ev) == 0, "get_async_event");
  expect(ev.event_type == IBV_EVENT_QP_FATAL, "IBV_EVENT_QP_FATAL");
  expect(ev.element.qp == rig.qp, "the event names the QP");
  ibv_ack_async_event(&ev);
  const std::vector<ibv_wc> wc = rig.poll(kDepth, 2000);
  expect(wc.size() == kDepth, "every posted WR completed");
  for (std::size_t i = 0; i < wc.size(); ++i) {
    expect(wc[i].wr_id == i, "completions in posting order");
    expect(wc[i].status == (i < kAfter - 1 ? IBV_WC_SUCCESS : IBV_WC_WR_FLUSH_ERR),
           "99 frames, then every other WR flushed (the 100th frame was not placed)");
  }
  expect(!rig.to(IBV_QPS_RESET), "ibv_modify_qp before ibv_query_qp: the kernel's stale RTR");
  expect(rig.state() == IBV_QPS_ERR, "ibv_query_qp reads the error state");
  expect(rig.to(IBV_QPS_RESET), "RESET once the kernel knows");
  rig.arm();
  expect(rig.poll(kDepth, 10000).size() == kDepth, "the QP receives again after RTR");
  return failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "error") return injected_error();
  if (mode == "clock" && argc > 2) return clock_kind(argv[2]);
  if (mode == "phc" && argc > 2) return phc(argv[2]);
  if (mode == "cq") return cq_sizes();
  if (mode == "overrun") return overrun();
  if (mode == "ebusy" && argc > 2) return ebusy(argv[2]);
  if (mode == "qpfatal") return qp_fatal();
  fprintf(stderr,
          "usage: %s error | clock wallclock|realtime|raw|none | phc tai|realtime | cq | overrun "
          "| ebusy v44|fixed | qpfatal\n",
          argv[0]);
  return 2;
}
