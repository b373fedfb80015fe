// A small test harness for the verbs conformance suite. The suite uses only the public
// libibverbs API, so the same binary runs against softverbs and against a real ConnectX.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace conf {

// The ibv_reg_mr macro mixes two enum types when given an enumerator (clang warns).
constexpr unsigned kLocalWrite = IBV_ACCESS_LOCAL_WRITE;

struct Options {
  std::string dev;     // RDMA device under test
  std::string tx_if;   // netdev whose frames reach the device's port
  std::string dev_if;  // the device's own netdev (sniffer TX case); optional
  std::string sysfs_root = "/sys";
  std::string dmabuf = "any";  // expected probe answer: ebadf | eopnotsupp | any
  std::string only;            // run cases whose name contains this
  std::string dev2;            // optional second device and the netdev feeding it
  std::string tx_if2;
};
const Options& options();

struct Failure {
  std::string what;
};

// Records a failure (file:line and the message) and aborts the current case.
[[noreturn]] void fail(const char* file, int line, const std::string& msg);
// Marks the current case as not applicable here (printed, not counted as passed).
[[noreturn]] void skip(const std::string& why);

#define CONF_CHECK(cond, msg)                                                         \
  do {                                                                                \
    if (!(cond)) ::conf::fail(__FILE__, __LINE__, std::string(#cond " -- ") + (msg)); \
  } while (0)
#define CONF_EQ(a, b, msg)                                                         \
  do {                                                                             \
    const auto va_ = (a);                                                          \
    const auto vb_ = (b);                                                          \
    if (!(va_ == vb_))                                                             \
      ::conf::fail(__FILE__, __LINE__,                                             \
                   std::string(#a " == " #b " (") + std::to_string(va_) + " vs " + \
                       std::to_string(vb_) + ") -- " + (msg));                     \
  } while (0)

struct Case {
  const char* name;
  const char* what;  // the behaviour it proves
  void (*fn)();
};
std::vector<Case>& registry();
struct Register {
  Register(const char* name, const char* what, void (*fn)()) {
    registry().push_back({name, what, fn});
  }
};
#define CONF_CASE(name, what)                                  \
  static void name();                                          \
  static const ::conf::Register reg_##name(#name, what, name); \
  static void name()

int run_all(const Options& opt);

// ---- verbs helpers ----

ibv_device* find_device(const std::string& name);

// RAII bundle: device context, PD, CQ, raw packet QP and a registered buffer.
struct RigSpec {
  int cqe = 64;
  uint32_t recv_wr = 64;
  uint32_t recv_sge = 2;
  size_t buffer = 1 << 20;
  bool cq_ex = false;
  uint64_t wc_flags = 0;
  bool channel = false;
  bool to_rtr = true;
  std::string dev{};  // empty: the device under test
};

class Rig {
 public:
  explicit Rig(const RigSpec& spec = {});
  ~Rig();
  Rig(const Rig&) = delete;
  Rig& operator=(const Rig&) = delete;

  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_comp_channel* channel = nullptr;
  ibv_cq* cq = nullptr;
  ibv_cq_ex* cqx = nullptr;
  ibv_qp* qp = nullptr;
  ibv_qp_cap cap{};
  uint8_t* buf = nullptr;
  size_t buf_len = 0;
  ibv_mr* mr = nullptr;

  // A second QP on the same CQ and PD.
  ibv_qp* add_qp(uint32_t recv_wr = 64, uint32_t recv_sge = 2, bool to_rtr = true);
  ibv_flow* add_flow(ibv_qp* q, ibv_flow_attr* attr);
  void destroy_flow(ibv_flow* f);
  void destroy_qp(ibv_qp* q);
  // Posts one WR whose SGEs are (offset, length) pairs inside buf.
  int post(ibv_qp* q, uint64_t wr_id, const std::vector<std::pair<size_t, uint32_t>>& sges);
  // Posts n WRs of one SGE of `len` bytes each, consecutive slots from `first_slot`.
  void post_n(ibv_qp* q, int n, uint64_t first_id, uint32_t len, size_t first_slot = 0);

 private:
  std::vector<ibv_flow*> flows_;
  std::vector<ibv_qp*> qps_;
};

void to_state(ibv_qp* qp, ibv_qp_state s);
// Polls until `want` completions arrived or `ms` passed; returns what arrived.
std::vector<ibv_wc> poll_for(ibv_cq* cq, size_t want, int ms);
// Polls for `ms` and returns everything (used to prove that nothing arrives).
std::vector<ibv_wc> drain(ibv_cq* cq, int ms);
// Waits (bounded) for `expected` completions, then keeps polling `settle_ms` for extra ones,
// so a slow or loaded host neither fails the case nor hides a surplus.
std::vector<ibv_wc> collect(ibv_cq* cq, size_t expected, int settle_ms = 200);
uint64_t out_of_buffer();
void sleep_ms(int ms);

}  // namespace conf
