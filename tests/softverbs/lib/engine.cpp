// The receive engine: one thread per device reads the netdev through an AF_PACKET TPACKET_V3
// ring, steers each frame through the flow rules and scatters it into posted receive WRs.
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>

#include "sv.hpp"

namespace sv {
namespace {

std::mutex engine_mu;  // serialises engine start/stop across devices

enum class Scatter { ok, prot, len };

struct Target {
  uint8_t* dst;
  uint32_t len;
  bool device;  // CUDA device memory: written with cuda_copy
};

// Validates every non-empty SGE of the WR against the registered MRs (under Device::mu).
Scatter check_sges(const Device& dev, const Qp& q, const ibv_sge* sg, uint32_t n, uint32_t need,
                   Target* out, uint32_t& nout) {
  uint64_t room = 0;
  nout = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const ibv_sge& s = sg[i];
    if (s.length == 0) continue;
    auto it = dev.mrs.find(s.lkey);
    if (it == dev.mrs.end()) return Scatter::prot;
    const Mr& m = *it->second;
    if (m.pd != q.pd || !(m.access & IBV_ACCESS_LOCAL_WRITE) || s.addr < m.addr ||
        s.addr - m.addr > m.length || m.length - (s.addr - m.addr) < s.length)
      return Scatter::prot;
    out[nout++] = Target{m.host + (s.addr - m.addr), s.length, m.device};
    room += s.length;
  }
  return need > room ? Scatter::len : Scatter::ok;
}

uint16_t fold(uint32_t sum) {
  while (sum >> 16)
    sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(sum);
}

uint32_t sum16(const uint8_t* p, size_t n, uint32_t acc) {
  for (size_t i = 0; i + 1 < n; i += 2)
    acc += static_cast<uint32_t>(p[i] << 8 | p[i + 1]);
  if (n & 1) acc += static_cast<uint32_t>(p[n - 1] << 8);
  return acc;
}

// IPv4 + UDP/TCP with both checksums right. `l4_trusted`: the kernel vouches for L4 (the frame
// was built locally with checksum offload, so the wire would carry a correct one).
bool checksums_ok(const uint8_t* f, size_t len, bool l4_trusted) {
  size_t off = 12;
  if (len >= 18 && f[12] == 0x81 && f[13] == 0x00) off = 16;
  if (len < off + 22 || f[off] != 0x08 || f[off + 1] != 0x00) return false;
  const uint8_t* ip = f + off + 2;
  const size_t ihl = static_cast<size_t>(ip[0] & 0x0f) * 4;
  if ((ip[0] >> 4) != 4 || ihl < 20 || len < off + 2 + ihl) return false;
  if (fold(sum16(ip, ihl, 0)) != 0xffff) return false;
  const size_t tot = static_cast<size_t>(ip[2] << 8 | ip[3]);
  if (((ip[6] & 0x3f) | ip[7]) != 0) return false;  // fragments are not verified
  const uint8_t proto = ip[9];
  if (proto != IPPROTO_UDP && proto != IPPROTO_TCP) return false;
  if (tot < ihl + 8 || len < off + 2 + tot) return false;
  if (l4_trusted) return true;
  const uint8_t* l4 = ip + ihl;
  const size_t l4len = tot - ihl;
  if (proto == IPPROTO_UDP && l4[6] == 0 && l4[7] == 0) return true;  // no checksum sent
  uint32_t acc = sum16(ip + 12, 8, 0) + proto + static_cast<uint32_t>(l4len);
  return fold(sum16(l4, l4len, acc)) == 0xffff;
}

void make_dirs(const std::string& path) {
  for (size_t p = path.find('/', 1); p != std::string::npos; p = path.find('/', p + 1))
    mkdir(path.substr(0, p).c_str(), 0755);
}

std::string oob_path_of(const Device& d) {
  const std::string root = sysfs_root();
  if (root.empty()) return "";
  return root + "/class/infiniband/" + d.cfg.name + "/ports/1/hw_counters/out_of_buffer";
}

uint64_t read_counter(const std::string& path) {
  FILE* f = fopen(path.c_str(), "re");
  if (!f) return 0;
  unsigned long long v = 0;
  if (fscanf(f, "%llu", &v) != 1) v = 0;
  fclose(f);
  return v;
}

int open_ring(Device& d) {
  int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  int v = TPACKET_V3;
  tpacket_req3 req{};
  // A block retires after 1 ms even when nearly empty, so the block count is the milliseconds
  // the engine thread may be descheduled before the kernel drops frames (uncounted): 64 blocks
  // ride out a loaded test host where 8 did not.
  req.tp_block_size = 1u << 20;
  req.tp_block_nr = 64;
  req.tp_frame_size = 1u << 11;
  req.tp_frame_nr = req.tp_block_size / req.tp_frame_size * req.tp_block_nr;
  req.tp_retire_blk_tov = 1;  // ms: bounds the latency of a quiet link
  sockaddr_ll sll{};
  sll.sll_family = AF_PACKET;
  sll.sll_protocol = htons(ETH_P_ALL);
  sll.sll_ifindex = d.ifindex;
  if (setsockopt(fd, SOL_PACKET, PACKET_VERSION, &v, sizeof v) != 0 ||
      setsockopt(fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof req) != 0) {
    int e = errno;
    close(fd);
    return e;
  }
  const size_t len = static_cast<size_t>(req.tp_block_size) * req.tp_block_nr;
  void* ring = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_LOCKED, fd, 0);
  if (ring == MAP_FAILED) ring = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (ring == MAP_FAILED || bind(fd, reinterpret_cast<sockaddr*>(&sll), sizeof sll) != 0) {
    int e = errno;
    if (ring != MAP_FAILED) munmap(ring, len);
    close(fd);
    return e;
  }
  d.rx_fd = fd;
  d.ring = ring;
  d.ring_len = len;
  d.block_size = req.tp_block_size;
  d.block_nr = req.tp_block_nr;
  d.tx_fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
  if (d.tx_fd >= 0 && bind(d.tx_fd, reinterpret_cast<sockaddr*>(&sll), sizeof sll) != 0) {
    close(d.tx_fd);
    d.tx_fd = -1;
  }
  return 0;
}

// Under Device::mu. VLAN tags the kernel stripped into metadata go back into the frame, since
// the NIC delivers the frame as it was on the wire.
void handle_frame(Device& d, tpacket3_hdr* h) {
  const auto* ll = reinterpret_cast<const sockaddr_ll*>(reinterpret_cast<uint8_t*>(h) +
                                                        TPACKET_ALIGN(sizeof(tpacket3_hdr)));
  const uint8_t* data = reinterpret_cast<uint8_t*>(h) + h->tp_mac;
  uint32_t len = h->tp_snaplen;
  if (len < 14) return;
  if (h->tp_status & TP_STATUS_VLAN_VALID) {
    if (d.scratch.size() < len + 4) d.scratch.resize(len + 4);
    uint8_t* s = d.scratch.data();
    memcpy(s, data, 12);
    const uint16_t tpid = (h->tp_status & TP_STATUS_VLAN_TPID_VALID) ? h->hv1.tp_vlan_tpid : 0x8100;
    const uint16_t tci = static_cast<uint16_t>(h->hv1.tp_vlan_tci);
    s[12] = static_cast<uint8_t>(tpid >> 8);
    s[13] = static_cast<uint8_t>(tpid);
    s[14] = static_cast<uint8_t>(tci >> 8);
    s[15] = static_cast<uint8_t>(tci);
    memcpy(s + 16, data + 12, len - 12);
    data = s;
    len += 4;
  }
  const bool trusted = h->tp_status & (TP_STATUS_CSUM_VALID | TP_STATUS_CSUMNOTREADY);
  Frame f{data, len, static_cast<uint64_t>(h->tp_sec) * 1000000000ULL + h->tp_nsec,
          checksums_ok(data, len, trusted), ll->sll_pkttype == PACKET_OUTGOING};
  d.steer(f);
}

// SOFTVERBS_INJECT_WC_ERROR: whether the frame about to be placed on `dev` is one to fail.
bool inject_error(Device& dev) {
  const WcErrorInjection& w = wc_error_injection();
  if (!w.enabled || (!w.device.empty() && w.device != dev.cfg.name)) return false;
  const uint64_t n = dev.frames_placed.fetch_add(1, std::memory_order_relaxed) + 1;
  if (n == w.after) return true;
  return w.every != 0 && n > w.after && (n - w.after) % w.every == 0;
}

// A QP-fatal completion error: the WR completes with `status` (its frame is lost), the QP
// enters ERR and every other posted WR is flushed in posting order (flush_rq); nothing is
// received until the application takes the QP through RESET back to RTR. Modelled on the IB
// spec (vol. 1, 10.3.1: a QP in the Error state completes its outstanding and later posted
// WRs with flush errors) and on mlx5, where any error CQE leaves the receive queue in error:
// the kernel's mlx5e recovers its RQ after one (drivers/net/ethernet/mellanox/mlx5/core/
// en/reporter_rx.c mlx5e_rx_reporter_err_rq_cqe_recover, for the syndromes of en/health.h
// cqe_syndrome_needs_recover, local length included), as does DPDK's mlx5 PMD
// (drivers/net/mlx5/mlx5_rx.c mlx5_rx_err_handle: RESET, then ready again).
void fail_qp(Qp& q, Cqe& e, uint16_t status, uint32_t vendor_err) {
  e.status = status;
  e.vendor_err = vendor_err;
  q.rcq->push(e);
  q.state = IBV_QPS_ERR;  // the device's state only: the kernel learns it from ibv_query_qp
  flush_rq(q);
}

// SOFTVERBS_INJECT_QP_FATAL: whether the frame about to be placed on `dev` raises a work queue
// catastrophic error on its QP instead.
bool inject_qp_fatal(Device& dev) {
  const QpFatalInjection& w = qp_fatal_injection();
  if (!w.enabled || (!w.device.empty() && w.device != dev.cfg.name)) return false;
  return dev.frames_for_fatal.fetch_add(1, std::memory_order_relaxed) + 1 == w.after;
}

// A work queue catastrophic error on the QP's receive queue: the firmware's
// MLX5_EVENT_TYPE_WQ_CATAS_ERROR for the RQ, which the kernel hands to mlx5_ib_qp_event (the
// event handler of a raw packet QP's RQ: qp.c create_user_qp sets it on the RQ's base) and
// reports as IB_EVENT_QP_FATAL (the only error event an RQ may raise: qpc.c
// rq_allowed_event_types). The RQ is in error (ibv_get_async_event(3): "transitioned to error
// state"); created with flush_in_error_en (qp.c create_raw_packet_qp_rq) it flushes every
// posted WR, the frame is not placed, and the kernel's cached state is not told.
void qp_fatal(Qp& q) {
  q.state = IBV_QPS_ERR;
  flush_rq(q);
  q.ctx->post_async(IBV_EVENT_QP_FATAL, &q.box.qp);
}

// IBV_WC_LOC_LEN_ERR: QP-fatal as on mlx5, or (SOFTVERBS_LOC_LEN=continue) the WR alone fails
// and the QP goes on, as hardware that does not stop its queue would.
void loc_len(Qp& q, Cqe& e, uint32_t vendor_err) {
  if (loc_len_mode() == LocLenMode::error) return fail_qp(q, e, IBV_WC_LOC_LEN_ERR, vendor_err);
  e.status = IBV_WC_LOC_LEN_ERR;
  e.vendor_err = vendor_err;
  q.rcq->push(e);
}

}  // namespace

void deliver(Qp& q, const Frame& f, bool header_only) {
  std::lock_guard<Spin> g(q.lock);
  deliver_locked(q, f, header_only);
}

void deliver_locked(Qp& q, const Frame& f, bool header_only) {
  Device& dev = *q.ctx->dev;
  if (q.state != IBV_QPS_RTR && q.state != IBV_QPS_RTS) return;
  if (q.rq_head == q.rq_tail) {
    dev.out_of_buffer.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (inject_qp_fatal(dev)) return qp_fatal(q);
  const uint32_t slot = static_cast<uint32_t>(q.rq_head++ & (q.wr_cap - 1));
  Cqe e{};
  e.wr_id = q.wr_id[slot];
  e.qp_num = q.box.qp.qp_num;
  e.opcode = IBV_WC_RECV;
  e.ts_ns = f.ts_ns;
  if (inject_error(dev)) {
    const WcErrorInjection& w = wc_error_injection();
    if (w.status == IBV_WC_LOC_LEN_ERR) return loc_len(q, e, w.vendor_err);
    return fail_qp(q, e, w.status, w.vendor_err);
  }
  Target t[kMaxSge];
  uint32_t nt = 0;
  const Scatter r =
      check_sges(dev, q, &q.sge[static_cast<size_t>(slot) * q.max_sge], q.nsge[slot], f.len, t, nt);
  bool copied = true;
  if (r == Scatter::ok) {
    uint32_t done = 0;
    for (uint32_t i = 0; i < nt && done < f.len; ++i) {
      const uint32_t n = t[i].len < f.len - done ? t[i].len : f.len - done;
      if (!t[i].device) {
        memcpy(t[i].dst, f.data + done, n);
      } else if (!cuda_copy(t[i].dst, f.data + done, n)) {
        copied = false;  // the GPU is gone or the pointer was freed: a local protection error
        break;
      }
      done += n;
      if (header_only) break;
    }
  }
  if (r == Scatter::ok && copied) {
    e.byte_len = f.len;
    e.wc_flags = f.csum_ok ? IBV_WC_IP_CSUM_OK : 0;
    e.status = IBV_WC_SUCCESS;
  } else if (r == Scatter::len) {
    return loc_len(q, e, 0x51);  // longer than the WR's SGEs together
  }
  // A protection error (or a failed copy into GPU memory, which a NIC would see as one) is a
  // QP-fatal completion error: the rest is flushed.
  if (r == Scatter::prot || (r == Scatter::ok && !copied)) {
    return fail_qp(q, e, IBV_WC_LOC_PROT_ERR, 0x52);
  }
  q.rcq->push(e);
}

void Device::publish_counters(bool force) {
  const uint64_t v = out_of_buffer.load(std::memory_order_relaxed);
  if (v == oob_written || oob_path.empty()) return;
  // At full speed the counter moves per frame: rewrite the file at most once a millisecond,
  // and always when the engine goes idle.
  const uint64_t now = realtime_ns();
  if (!force && now - oob_published_ns < 1000000) return;
  oob_published_ns = now;
  const std::string tmp = oob_path + ".tmp";
  FILE* f = fopen(tmp.c_str(), "we");
  if (!f) return;
  fprintf(f, "%llu\n", static_cast<unsigned long long>(v));
  if (fclose(f) == 0 && rename(tmp.c_str(), oob_path.c_str()) == 0) oob_written = v;
}

void run_packet_engine(Device& d) {
  unsigned cur = 0;
  auto* base = static_cast<uint8_t*>(d.ring);
  while (!d.stopping.load()) {
    auto* block =
        reinterpret_cast<tpacket_block_desc*>(base + static_cast<size_t>(cur) * d.block_size);
    if (!(__atomic_load_n(&block->hdr.bh1.block_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER)) {
      pollfd p[2] = {{d.rx_fd, POLLIN | POLLERR, 0}, {d.stop_fd, POLLIN, 0}};
      poll(p, 2, 100);
      d.publish_counters(true);
      continue;
    }
    {
      std::lock_guard<std::mutex> g(d.mu);
      auto* h = reinterpret_cast<tpacket3_hdr*>(reinterpret_cast<uint8_t*>(block) +
                                                block->hdr.bh1.offset_to_first_pkt);
      for (uint32_t i = 0; i < block->hdr.bh1.num_pkts; ++i) {
        handle_frame(d, h);
        h = reinterpret_cast<tpacket3_hdr*>(reinterpret_cast<uint8_t*>(h) + h->tp_next_offset);
      }
      d.publish_counters();
    }
    __atomic_store_n(&block->hdr.bh1.block_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
    cur = (cur + 1) % d.block_nr;
  }
}

void init_sysfs(Device& d) {
  // Counters are cumulative like the kernel's: continue from what the file already says.
  d.oob_path = oob_path_of(d);
  if (d.oob_path.empty()) return;
  make_dirs(d.oob_path);
  d.out_of_buffer.store(read_counter(d.oob_path));
  d.oob_written = ~0ULL;
  d.publish_counters(true);
}

int engine_acquire(Device& d) {
  std::lock_guard<std::mutex> g(engine_mu);
  if (d.engine_pid != getpid()) {
    // A forked child inherits the parent's bookkeeping but not its thread or ring.
    new (&d.engine) std::thread();
    d.users = 0;
  }
  if (d.users++ > 0) return 0;
  if (!d.cfg.wire) {
    if (int rc = open_ring(d); rc != 0) {
      --d.users;
      return rc;
    }
  }
  d.stop_fd = eventfd(0, EFD_CLOEXEC);
  d.stopping.store(false);
  d.engine_pid = getpid();
  d.engine = std::thread([&d] {
    if (d.cfg.wire)
      run_wire_engine(d);
    else
      run_packet_engine(d);
  });
  return 0;
}

void engine_release(Device& d) {
  std::lock_guard<std::mutex> g(engine_mu);
  if (--d.users > 0) return;
  d.stopping.store(true);
  uint64_t one = 1;
  ssize_t n = write(d.stop_fd, &one, sizeof one);
  (void)n;
  if (d.engine.joinable()) d.engine.join();
  close(d.stop_fd);
  d.stop_fd = -1;
  if (d.ring) munmap(d.ring, d.ring_len);
  d.ring = nullptr;
  if (d.rx_fd >= 0) close(d.rx_fd);
  if (d.tx_fd >= 0) close(d.tx_fd);
  d.rx_fd = d.tx_fd = -1;
}

}  // namespace sv
