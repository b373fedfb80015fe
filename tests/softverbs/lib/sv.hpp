// softverbs internals: the objects behind the libibverbs structs an application sees.
// Every verbs struct handed out is the first member of a "Box" that also points back to the
// C++ object, so a pointer from the application finds its owner without offsetof tricks.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "events.hpp"
#include "kernel_trap.hpp"

namespace sv {

// Busy-wait lock for the short critical sections mlx5 also guards with spinlocks.
class Spin {
 public:
  void lock() noexcept {
    for (unsigned spins = 0; flag_.exchange(true, std::memory_order_acquire);) {
      while (flag_.load(std::memory_order_relaxed)) {
        // On an oversubscribed host the holder may be descheduled: stop burning its core.
        if (++spins % 128 == 0) std::this_thread::yield();
      }
    }
  }
  void unlock() noexcept { flag_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> flag_{false};
};

struct Context;
struct Cq;
struct Qp;
struct Pd;
struct Mr;
struct Device;

struct CtxBox {
  verbs_context vctx;
  Context* self;
};
struct CqBox {
  ibv_cq_ex cq;
  Cq* self;
};
struct QpBox {
  ibv_qp qp;
  Qp* self;
};
struct PdBox {
  ibv_pd pd;
  Pd* self;
};
struct MrBox {
  ibv_mr mr;
  Mr* self;
};
struct FlowBox {
  ibv_flow flow;
  struct Rule* self;
};

Context* ctx_of(ibv_context* c);
inline Cq* cq_of(ibv_cq* c) {
  return reinterpret_cast<CqBox*>(c)->self;
}
inline Cq* cq_of(ibv_cq_ex* c) {
  return reinterpret_cast<CqBox*>(c)->self;
}
inline Qp* qp_of(ibv_qp* q) {
  return reinterpret_cast<QpBox*>(q)->self;
}
inline Pd* pd_of(ibv_pd* p) {
  return reinterpret_cast<PdBox*>(p)->self;
}
inline Mr* mr_of(ibv_mr* m) {
  return reinterpret_cast<MrBox*>(m)->self;
}

// ---- configuration (environment) -------------------------------------------------------------

struct DeviceConfig {
  std::string name;    // fake RDMA device name, e.g. "sv0"
  std::string netdev;  // backing interface, or empty for the synthetic wire
  bool wire = false;
};
const std::vector<DeviceConfig>& configured_devices();
std::string sysfs_root();  // SOFTVERBS_SYSFS_ROOT, where fake hw_counters live
bool dmabuf_supported();   // SOFTVERBS_DMABUF=ebadf (supported) | eopnotsupp (default)
bool has_cap_net_raw();
// CUDA device memory (cuda.cpp): the runtime is dlopen'ed on first use, never linked.
bool is_device_pointer(const void* p);
bool cuda_copy(void* dst, const void* src, size_t bytes);  // cudaMemcpy, direction inferred
bool peer_memory_loaded();                                 // SOFTVERBS_PEERMEM=1

// SOFTVERBS_CLOCK=KIND[,tai][,offset=S][,ppm=P]: which completion timestamps the device
// offers and what its PTP hardware clock (PHC) reads.
enum class ClockMode {
  wallclock,  // clock-info page: raw ticks and libmlx5-converted PHC ns (default)
  realtime,   // real-time clock mode: WALLCLOCK alone reads the raw CQE field, s << 32 | ns
  rtonly,     // the same, and the receive queues take real-time timestamps only: a QP on a CQ
              // with COMPLETION_TIMESTAMP (free-running ticks) is refused, EOPNOTSUPP
  raw,        // no clock-info page: WALLCLOCK refused (EOPNOTSUPP), raw ticks offered
  none,       // no clock: completion_timestamp_mask 0, both timestamp flags refused
};
struct ClockConfig {
  ClockMode mode = ClockMode::wallclock;
  int64_t offset_ns = 0;  // PHC - CLOCK_REALTIME when the process first reads the clock
  double ppm = 0;         // PHC rate error against CLOCK_REALTIME, parts per million
};
const ClockConfig& clock_config();
inline ClockMode clock_mode() {
  return clock_config().mode;
}
inline bool real_time_clock() {
  return clock_mode() == ClockMode::realtime || clock_mode() == ClockMode::rtonly;
}
uint64_t phc_ns(uint64_t host_ns);  // the PHC's reading at CLOCK_REALTIME `host_ns`
unsigned modify_qp_delay_us();      // SOFTVERBS_MODIFY_QP_US: how long ibv_modify_qp takes
int max_cqe();                      // SOFTVERBS_MAX_CQE (default kMaxCqe)
uint64_t cq_overrun_after();        // SOFTVERBS_INJECT_CQ_OVERRUN=after=N: the N-th completion of
                                    // a CQ overruns it (0: never)

// SOFTVERBS_INJECT_WC_ERROR: turn a receive completion into a QP-fatal error (README.md).
struct WcErrorInjection {
  bool enabled = false;
  std::string device;  // empty: every device
  uint64_t after = 0;  // the after-th frame a QP of the device receives errs...
  uint64_t every = 0;  // ...and every every-th one after it (0: once)
  uint16_t status = IBV_WC_LOC_QP_OP_ERR;
  uint32_t vendor_err = 0;  // as mlx5 reports it for that syndrome
};
const WcErrorInjection& wc_error_injection();

// SOFTVERBS_INJECT_QP_FATAL=after=N[,dev=NAME]: the N-th frame that reaches a posted WR of the
// device puts that QP's receive queue in error instead (a work queue catastrophic error):
// IBV_EVENT_QP_FATAL on the async fd, every posted WR flushed (README.md).
struct QpFatalInjection {
  bool enabled = false;
  std::string device;  // empty: every device
  uint64_t after = 0;
};
const QpFatalInjection& qp_fatal_injection();

// SOFTVERBS_INJECT_CLOCK_EBUSY=every=N[,rdma_core=44|53|fixed]: the first ibv_start_poll that
// finds a completion on a CQ with IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK, and every N-th
// after it, fails with EBUSY, as libmlx5's when mlx5dv_get_clock_info gives up on the kernel's
// clock-info page. What that EBUSY leaves behind depends on the rdma-core version (README.md):
enum class EbusyFlow {
  v44,    // up to v52 (Debian 12's 44.0): completion consumed, CQ lock left held
  v53,    // v53 to v64: completion consumed, lock released
  fixed,  // after v64 (commit 0819419e7): nothing consumed, the CQ intact
};
struct ClockEbusyInjection {
  uint64_t every = 0;  // 0: never
  EbusyFlow flow = EbusyFlow::v44;
};
const ClockEbusyInjection& clock_ebusy_injection();
bool trace_enabled();  // SOFTVERBS_TRACE=1: object creation traced on stderr

// SOFTVERBS_LOC_LEN: what a frame longer than the WR's SGEs (IBV_WC_LOC_LEN_ERR) does to the QP.
enum class LocLenMode {
  error,    // the RQ enters the error state and flushes, as on mlx5 (default)
  proceed,  // "continue": the WR is consumed and the QP goes on (hardware that does so)
};
LocLenMode loc_len_mode();

// ---- device attributes ------------------------------------------------------------------------

constexpr uint64_t kHcaClockKhz = 156250;  // ConnectX-4 Lx style: raw ticks are not nanoseconds
constexpr uint64_t kTimestampMask = 0x7fffffffffffffffULL;
constexpr uint32_t kMaxQpWr = 32768;
constexpr uint32_t kMaxSge = 30;
constexpr int kMaxCqe = 4194303;
uint64_t ns_to_ticks(uint64_t ns);
uint64_t realtime_ns();

// ---- completion queue ------------------------------------------------------------------------

struct Cqe {
  uint64_t wr_id;
  uint64_t ts_ns;
  uint32_t byte_len;
  uint32_t qp_num;
  uint32_t vendor_err;
  uint32_t wc_flags;
  uint16_t status;
  uint16_t opcode;
};

struct Cq {
  CqBox box{};
  Context* ctx = nullptr;
  std::vector<Cqe> ring;
  uint64_t mask = 0;
  uint64_t capacity = 0;  // entries the CQ holds before overrun (== box.cq.cqe)
  uint64_t wc_flags_ex = 0;
  alignas(64) std::atomic<uint64_t> head{0};  // consumer
  alignas(64) std::atomic<uint64_t> tail{0};  // producer
  alignas(64) Spin prod_lock;
  Spin cons_lock;
  std::atomic<bool> armed{false};
  std::atomic<bool> dead{false};
  std::atomic<int> users{0};     // QPs attached
  bool single_threaded = false;  // IBV_CREATE_CQ_ATTR_SINGLE_THREADED: libmlx5 takes no lock
  bool clock_update = false;     // WALLCLOCK asked for: start_poll reads the clock-info page
  uint64_t found_polls = 0;      // start_polls that found a completion (consumer side)
  // libmlx5's CQ lock left held by a v44 EBUSY (SOFTVERBS_INJECT_CLOCK_EBUSY): the next call
  // that takes it would spin forever on a real device; softverbs aborts there instead.
  std::atomic<bool> lock_leaked{false};
  uint64_t pushed = 0;             // completions written (under prod_lock): overrun injection
  uint32_t comp_events_read = 0;   // under box.cq.mutex: what ack_cq_events must match
  uint32_t async_events_read = 0;  // under box.cq.mutex
  const Cqe* cur = nullptr;        // entry being read between start_poll and end_poll
  uint64_t cur_pos = 0;
  uint64_t cur_end = 0;

  // Producer side. Returns false (and kills the CQ) on overrun.
  bool push(const Cqe& e);
  // Removes every entry of qp_num (QP reset or destroyed).
  void purge(uint32_t qp_num);
  // Aborts with `call` named when libmlx5 would hang on the lock a v44 EBUSY left held.
  void take_mlx5_lock(const char* call) const;
};

// ---- protection domain and memory -------------------------------------------------------------

struct Pd {
  PdBox box{};
  Context* ctx = nullptr;
  std::atomic<int> users{0};
};

struct Mr {
  MrBox box{};
  Pd* pd = nullptr;
  uint64_t addr = 0;  // iova the SGEs use
  uint64_t length = 0;
  uint8_t* host = nullptr;  // where iova maps in this process
  bool device = false;      // `host` is a CUDA device address: copied with cuda_copy
  unsigned access = 0;
  void* dmabuf_map = nullptr;  // mapping owned by a dma-buf MR
  size_t dmabuf_len = 0;
};

// ---- flow rules ----------------------------------------------------------------------------

// Header fields a rule can match, extracted once per frame. Values are as on the wire.
struct Key {
  uint8_t dmac[6];
  uint8_t smac[6];
  uint16_t ether_type;
  uint16_t vlan_tag;
  uint32_t src_ip;
  uint32_t dst_ip;
  uint8_t proto;
  uint8_t tos;
  uint8_t ttl;
  uint8_t ip_flags;
  uint16_t dst_port;
  uint16_t src_port;
  uint8_t is_ipv4;
  uint8_t l4;  // IPPROTO_UDP / IPPROTO_TCP when a port pair was parsed
  uint8_t pad[2];
};
static_assert(sizeof(Key) == 36);  // no implicit padding: rules compare bytewise

struct Match {
  Key val{};
  Key mask{};
};

struct Rule {
  FlowBox box{};
  Qp* qp = nullptr;
  ibv_flow_attr_type type = IBV_FLOW_ATTR_NORMAL;
  uint32_t priority = 0;  // the kernel's flow table priority (flow.cpp core_priority)
  uint32_t flags = 0;
  uint64_t seq = 0;
  Match match;
  uint64_t wire_frame = 0;             // synthetic wire: next frame (CODIF or VDIF) of this stream
  std::vector<uint8_t> wire_template;  // synthetic wire: the stream's headers, built once
  uint64_t wire_start_ns = 0;          // synthetic wire: CLOCK_MONOTONIC of its first frame
  std::unique_ptr<KernelTrap> trap;    // SOFTVERBS_TRAP=nft: the kernel no longer sees it
};

bool key_matches(const Match& m, const Key& k);
bool same_match(const Match& a, const Match& b);
// Parses an Ethernet frame into a Key. Returns false for frames too short for Ethernet.
bool parse_key(const uint8_t* f, size_t len, Key& k);

// ---- queue pair ----------------------------------------------------------------------------

struct Qp {
  QpBox box{};
  Context* ctx = nullptr;
  Pd* pd = nullptr;
  Cq* rcq = nullptr;
  Cq* scq = nullptr;
  Spin lock;  // RQ and state; taken by post_recv, the receive engine and modify_qp
  ibv_qp_state state = IBV_QPS_RESET;  // the receive queue's state in the device
  // The state the kernel believes (mlx5_ib_qp.state, mlx5_ib_rq.state): changed by
  // ibv_modify_qp, refreshed from the device by ibv_query_qp, but not by an error the device
  // raised itself (an error CQE, a catastrophic error). While the two differ the device refuses
  // ibv_modify_qp (EINVAL): the kernel names the cached state as the current one.
  ibv_qp_state kernel_state = IBV_QPS_RESET;
  uint32_t wr_cap = 0;  // power of two
  uint32_t max_sge = 0;
  // libmlx5's rq.qp_state_max_gs (providers/mlx5/verbs.c set_qp_operational_state): -1 from
  // creation and in RESET, max_sge from INIT on (ERR and RTR leave it); post_recv refuses a WR
  // with more SGEs than this (EINVAL), so nothing can be posted in RESET.
  int state_max_sge = -1;
  uint32_t max_send_wr = 0;
  uint32_t max_send_sge = 0;
  uint32_t max_inline = 0;
  uint8_t port = 0;
  uint64_t rq_head = 0;  // next WR to complete
  uint64_t rq_tail = 0;  // next free slot
  std::vector<uint64_t> wr_id;
  std::vector<uint32_t> nsge;
  std::vector<ibv_sge> sge;  // wr_cap * max_sge
  int flows = 0;             // under Device::mu
};

// ---- device runtime ----------------------------------------------------------------------

struct Frame {
  const uint8_t* data;
  uint32_t len;
  uint64_t ts_ns;
  bool csum_ok;
  bool outgoing;
};

struct Device {
  ibv_device ibdev{};
  DeviceConfig cfg;
  int ifindex = 0;
  uint8_t mac[6]{};
  // Guards rules, QP/MR lifetimes and steering. The receive engine holds it per batch.
  std::mutex mu;
  std::vector<Rule*> rules;  // sorted by (priority, seq)
  uint64_t next_seq = 0;
  std::vector<Context*> contexts;
  bool trap_table = false;  // SOFTVERBS_TRAP=nft: this process made the nft table (kernel_trap.cpp)
  std::unordered_map<uint32_t, Mr*> mrs;  // by lkey, under mu
  // out_of_buffer counter and its fake sysfs file
  std::atomic<uint64_t> out_of_buffer{0};
  uint64_t oob_written = ~0ULL;
  uint64_t oob_published_ns = 0;
  std::string oob_path;
  // engine
  int users = 0;  // contexts holding the engine
  pid_t engine_pid = 0;
  std::thread engine;
  int stop_fd = -1;
  std::atomic<bool> stopping{false};
  int rx_fd = -1;  // AF_PACKET TPACKET_V3 ring
  void* ring = nullptr;
  size_t ring_len = 0;
  unsigned block_size = 0;
  unsigned block_nr = 0;
  int tx_fd = -1;  // AF_PACKET socket for post_send
  std::vector<uint8_t> scratch;
  std::atomic<uint64_t> frames_placed{0};     // frames that reached a WR (error injection)
  std::atomic<uint64_t> frames_for_fatal{0};  // the same, for SOFTVERBS_INJECT_QP_FATAL

  void steer(const Frame& f);
  void publish_counters(bool force = false);  // engine thread only
};

std::vector<Device*>& devices();
Device* device_of(ibv_device* d);
void init_sysfs(Device& d);
int engine_acquire(Device& d);  // starts the receive engine (or the synthetic wire) if needed
void engine_release(Device& d);
void deliver(Qp& qp, const Frame& f, bool header_only);
void deliver_locked(Qp& qp, const Frame& f, bool header_only);  // caller holds qp.lock
void push_flush(Qp& qp, uint64_t wr_id);
void flush_rq(Qp& qp);  // every posted WR completes with IBV_WC_WR_FLUSH_ERR; under qp.lock
void run_packet_engine(Device& d);
void run_wire_engine(Device& d);

// A completion channel: the uverbs struct plus its event queue.
struct Channel;
struct ChannelBox {
  ibv_comp_channel ch;
  Channel* self;
};
struct Channel {
  ChannelBox box{};
  EventQueue events;
};

// ---- context -------------------------------------------------------------------------------

struct Context {
  CtxBox box{};
  Device* dev = nullptr;
  EventQueue async;
  int cmd_fd = -1;
  std::atomic<uint32_t>* next_qpn = nullptr;
  void post_async(ibv_event_type type, void* obj);
};

uint32_t allocate_qpn();
uint32_t allocate_key();

// ops installed in the context
int poll_cq(ibv_cq* cq, int n, ibv_wc* wc);
int req_notify_cq(ibv_cq* cq, int solicited_only);
int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad);
int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad);
ibv_flow* create_flow(ibv_qp* qp, ibv_flow_attr* attr);
int destroy_flow(ibv_flow* flow);
ibv_cq_ex* create_cq_ex(ibv_context* ctx, ibv_cq_init_attr_ex* attr);
int query_rt_values(ibv_context* ctx, ibv_values_ex* values);
int query_device_ex(ibv_context* ctx, const ibv_query_device_ex_input* in, ibv_device_attr_ex* attr,
                    size_t size);
int query_port(ibv_context* ctx, uint8_t port, ibv_port_attr* attr, size_t size);
ibv_qp* create_qp_ex(ibv_context* ctx, ibv_qp_init_attr_ex* attr);

}  // namespace sv
