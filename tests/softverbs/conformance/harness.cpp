#include "harness.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>

namespace conf {
namespace {

Options g_opt;

struct Skip {
  std::string why;
};

}  // namespace

const Options& options() {
  return g_opt;
}

std::vector<Case>& registry() {
  static std::vector<Case> cases;
  return cases;
}

void fail(const char* file, int line, const std::string& msg) {
  throw Failure{std::string(file) + ":" + std::to_string(line) + ": " + msg};
}

void skip(const std::string& why) {
  throw Skip{why};
}

int run_all(const Options& opt) {
  g_opt = opt;
  int passed = 0, failed = 0, skipped = 0;
  for (const Case& c : registry()) {
    if (!opt.only.empty() && std::string(c.name).find(opt.only) == std::string::npos) continue;
    printf("[ RUN  ] %s: %s\n", c.name, c.what);
    fflush(stdout);
    try {
      c.fn();
      printf("[  OK  ] %s\n", c.name);
      ++passed;
    } catch (const Failure& f) {
      printf("[ FAIL ] %s\n         %s\n", c.name, f.what.c_str());
      ++failed;
    } catch (const Skip& s) {
      printf("[ SKIP ] %s: %s\n", c.name, s.why.c_str());
      ++skipped;
    }
    fflush(stdout);
  }
  printf("conformance: %d passed, %d failed, %d skipped\n", passed, failed, skipped);
  return failed ? 1 : 0;
}

ibv_device* find_device(const std::string& name) {
  static ibv_device** list = nullptr;  // kept for the process: ibv_device pointers live in it
  if (!list) list = ibv_get_device_list(nullptr);
  for (int i = 0; list && list[i]; ++i)
    if (name == ibv_get_device_name(list[i])) return list[i];
  return nullptr;
}

void sleep_ms(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

void to_state(ibv_qp* qp, ibv_qp_state s) {
  ibv_qp_attr a{};
  a.qp_state = s;
  int mask = IBV_QP_STATE;
  if (s == IBV_QPS_INIT) {
    a.port_num = 1;
    mask |= IBV_QP_PORT;
  }
  int rc = ibv_modify_qp(qp, &a, mask);
  CONF_EQ(rc, 0, std::string("modify_qp to state ") + std::to_string(s));
}

Rig::Rig(const RigSpec& spec) {
  const std::string& name = spec.dev.empty() ? g_opt.dev : spec.dev;
  ibv_device* dev = find_device(name);
  CONF_CHECK(dev != nullptr, "device " + name + " not found");
  ctx = ibv_open_device(dev);
  CONF_CHECK(ctx != nullptr, strerror(errno));
  pd = ibv_alloc_pd(ctx);
  CONF_CHECK(pd != nullptr, strerror(errno));
  if (spec.channel) {
    channel = ibv_create_comp_channel(ctx);
    CONF_CHECK(channel != nullptr, strerror(errno));
  }
  if (spec.cq_ex) {
    ibv_cq_init_attr_ex a{};
    a.cqe = static_cast<uint32_t>(spec.cqe);
    a.channel = channel;
    a.wc_flags = spec.wc_flags;
    // One thread polls it. Single-threaded, libmlx5 takes no CQ lock, so an EBUSY from its
    // clock-info read (WALLCLOCK) cannot leave one held, which rdma-core before v53 does
    // (providers/mlx5/cq.c mlx5_start_poll) and which would hang the next poll and destroy.
    a.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
    a.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
    cqx = ibv_create_cq_ex(ctx, &a);
    CONF_CHECK(cqx != nullptr, strerror(errno));
    cq = ibv_cq_ex_to_cq(cqx);
  } else {
    cq = ibv_create_cq(ctx, spec.cqe, nullptr, channel, 0);
    CONF_CHECK(cq != nullptr, strerror(errno));
  }
  buf_len = spec.buffer;
  void* p = mmap(nullptr, buf_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CONF_CHECK(p != MAP_FAILED, strerror(errno));
  buf = static_cast<uint8_t*>(p);
  memset(buf, 0xee, buf_len);
  mr = ibv_reg_mr(pd, buf, buf_len, kLocalWrite);
  CONF_CHECK(mr != nullptr, strerror(errno));
  qp = add_qp(spec.recv_wr, spec.recv_sge, spec.to_rtr);
}

ibv_qp* Rig::add_qp(uint32_t recv_wr, uint32_t recv_sge, bool to_rtr) {
  ibv_qp_init_attr a{};
  a.send_cq = cq;
  a.recv_cq = cq;
  a.qp_type = IBV_QPT_RAW_PACKET;
  a.cap.max_recv_wr = recv_wr;
  a.cap.max_recv_sge = recv_sge;
  ibv_qp* q = ibv_create_qp(pd, &a);
  CONF_CHECK(q != nullptr, std::string("create raw QP: ") + strerror(errno));
  if (qps_.empty()) cap = a.cap;
  qps_.push_back(q);
  to_state(q, IBV_QPS_INIT);
  if (to_rtr) to_state(q, IBV_QPS_RTR);
  return q;
}

ibv_flow* Rig::add_flow(ibv_qp* q, ibv_flow_attr* attr) {
  ibv_flow* f = ibv_create_flow(q, attr);
  CONF_CHECK(f != nullptr, std::string("create_flow: ") + strerror(errno));
  flows_.push_back(f);
  return f;
}

void Rig::destroy_flow(ibv_flow* f) {
  std::erase(flows_, f);
  CONF_EQ(ibv_destroy_flow(f), 0, "destroy_flow");
}

void Rig::destroy_qp(ibv_qp* q) {
  std::erase(qps_, q);
  CONF_EQ(ibv_destroy_qp(q), 0, "destroy_qp");
}

Rig::~Rig() {
  for (ibv_flow* f : flows_)
    ibv_destroy_flow(f);
  for (ibv_qp* q : qps_)
    ibv_destroy_qp(q);
  if (mr) ibv_dereg_mr(mr);
  if (buf) munmap(buf, buf_len);
  if (cq) ibv_destroy_cq(cq);
  if (channel) ibv_destroy_comp_channel(channel);
  if (pd) ibv_dealloc_pd(pd);
  if (ctx) ibv_close_device(ctx);
}

int Rig::post(ibv_qp* q, uint64_t wr_id, const std::vector<std::pair<size_t, uint32_t>>& sges) {
  std::vector<ibv_sge> sg;
  for (auto [off, len] : sges)
    sg.push_back(ibv_sge{reinterpret_cast<uintptr_t>(buf + off), len, mr->lkey});
  ibv_recv_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = sg.data();
  wr.num_sge = static_cast<int>(sg.size());
  ibv_recv_wr* bad = nullptr;
  return ibv_post_recv(q, &wr, &bad);
}

void Rig::post_n(ibv_qp* q, int n, uint64_t first_id, uint32_t len, size_t first_slot) {
  for (int i = 0; i < n; ++i) {
    const size_t off = (first_slot + static_cast<size_t>(i)) * len;
    CONF_CHECK(off + len <= buf_len, "buffer too small for the posts");
    CONF_EQ(post(q, first_id + static_cast<uint64_t>(i), {{off, len}}), 0, "post_recv");
  }
}

std::vector<ibv_wc> poll_for(ibv_cq* cq, size_t want, int ms) {
  std::vector<ibv_wc> out;
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  ibv_wc wc[16];
  while (out.size() < want && std::chrono::steady_clock::now() < end) {
    int n = ibv_poll_cq(cq, 16, wc);
    CONF_CHECK(n >= 0, "poll_cq failed");
    out.insert(out.end(), wc, wc + n);
    if (n == 0) sleep_ms(1);
  }
  return out;
}

std::vector<ibv_wc> drain(ibv_cq* cq, int ms) {
  return poll_for(cq, SIZE_MAX, ms);
}

std::vector<ibv_wc> collect(ibv_cq* cq, size_t expected, int settle_ms) {
  auto wc = poll_for(cq, expected, 5000);
  const auto more = drain(cq, settle_ms);
  wc.insert(wc.end(), more.begin(), more.end());
  return wc;
}

uint64_t out_of_buffer() {
  const std::string path =
      g_opt.sysfs_root + "/class/infiniband/" + g_opt.dev + "/ports/1/hw_counters/out_of_buffer";
  std::ifstream in(path);
  CONF_CHECK(in.good(), "cannot read " + path);
  uint64_t v = 0;
  in >> v;
  CONF_CHECK(!in.fail(), "no number in " + path);
  return v;
}

}  // namespace conf
