// Synthetic wire: an in-process source that completes posted receive WRs with valid CODIF
// frames (or VDIF frames, with or without a VTP number: SOFTVERBS_WIRE_FORMAT) for every NORMAL
// flow rule, like a NIC's DMA engine on its own core: at full speed, or paced by
// SOFTVERBS_WIRE_PACE (a benchmark facility, not a modelled NIC behaviour). It writes only the
// first (header) SGE; payload bytes stay as the application initialised them.
#include <arpa/inet.h>
#include <poll.h>
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

#include "sv.hpp"

namespace sv {
namespace {

enum class WireFormat { codif, vdif, vdif_vtp };

struct WireParams {
  WireFormat format = WireFormat::codif;
  uint32_t payload = 8192;              // data array bytes (the header not included)
  uint64_t frames_per_period = 100000;  // VDIF: frames per second (the period is 1 s)
  uint16_t period_s = 1;
  uint8_t nbits = 8;
  // Bytes in front of the data array in the UDP payload: the CODIF header (64), or the VDIF
  // header (32) after the 8-byte VTP number when there is one.
  uint32_t header_bytes() const {
    return format == WireFormat::codif ? 64 : format == WireFormat::vdif ? 32 : 8 + 32;
  }
  uint32_t udp_payload() const { return header_bytes() + payload; }
};

// SOFTVERBS_WIRE_FORMAT=codif|vdif|vdif-vtp (default codif; anything else is said on stderr and
// taken as codif). SOFTVERBS_WIRE_PAYLOAD: data bytes, default 8192 (CODIF) or 1024 (VDIF).
WireParams wire_params() {
  WireParams p;
  const char* f = getenv("SOFTVERBS_WIRE_FORMAT");
  const std::string format = f != nullptr ? f : "codif";
  if (format == "vdif") p.format = WireFormat::vdif;
  if (format == "vdif-vtp") p.format = WireFormat::vdif_vtp;
  if (p.format == WireFormat::codif && format != "codif")
    fprintf(stderr, "softverbs: SOFTVERBS_WIRE_FORMAT=%s not understood: codif\n", f);
  const uint32_t fallback = p.format == WireFormat::codif ? 8192 : 1024;
  p.payload = fallback;
  if (const char* v = getenv("SOFTVERBS_WIRE_PAYLOAD"))
    p.payload = static_cast<uint32_t>(atoi(v)) & ~7u;
  if (p.payload < 8 || p.payload > 8900) p.payload = fallback;
  return p;
}

// SOFTVERBS_WIRE_PACE="[rate=R][,frames=N][,seconds=S][,batch=B][,hold=1]", per stream (flow
// rule): R frames/s against CLOCK_MONOTONIC from the stream's first frame, released in batches
// of B (default 64, the unpaced burst); the stream falls silent after N frames or S seconds. A
// frame counts when the wire sends it, whether a WR takes it or out_of_buffer counts it.
// hold=1: a frame that finds no posted WR (or the QP not receiving) is not sent but waits for
// one, so nothing is lost: an instruction count of the receive loop then measures the same
// loss-free work however the threads are scheduled (under valgrind the wire thread fills every
// posted WR in one time slice and would drop frames for the rest of it). Closest real
// behaviour: a WQ with IBV_WQ_FLAGS_DELAY_DROP (ibv_create_wq(3)), which waits for WQEs up to a
// device timeout; hold=1 has no timeout (tests/softverbs/README.md).
struct WirePace {
  double rate = 0;      // frames/s per stream; 0: as fast as the thread runs
  uint64_t frames = 0;  // frames per stream; 0: unbounded
  double seconds = 0;   // seconds per stream from its first frame; 0: unbounded
  uint32_t batch = 64;  // frames per burst
  bool hold = false;    // wait for a posted WR instead of counting out_of_buffer
};

bool pace_item(const std::string& key, const std::string& val, WirePace& p) {
  char* rest = nullptr;
  if (val.empty()) return false;
  if (key == "rate" || key == "seconds") {
    const double v = strtod(val.c_str(), &rest);
    (key == "rate" ? p.rate : p.seconds) = v;
    return *rest == 0 && v >= 0;
  }
  const unsigned long long v = strtoull(val.c_str(), &rest, 10);
  if (key == "frames") p.frames = v;
  if (key == "batch") p.batch = static_cast<uint32_t>(std::min<unsigned long long>(v, 4096));
  if (key == "hold") p.hold = v == 1;
  return *rest == 0 && (key == "frames" || (key == "batch" && v >= 1) || (key == "hold" && v <= 1));
}

// Malformed: unpaced and unbounded, said once on stderr (a benchmark that asked for a rate
// must see that it did not get one).
WirePace wire_pace() {
  WirePace p;
  const char* spec = getenv("SOFTVERBS_WIRE_PACE");
  if (!spec || !*spec) return p;
  const std::string s = spec;
  bool ok = true;
  for (size_t pos = 0; pos < s.size() && ok;) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    const std::string item = s.substr(pos, end - pos);
    const size_t eq = item.find('=');
    ok = eq != std::string::npos && pace_item(item.substr(0, eq), item.substr(eq + 1), p);
    pos = end + 1;
  }
  if (!ok) {
    fprintf(stderr, "softverbs: SOFTVERBS_WIRE_PACE=%s not understood: unpaced\n", spec);
    return WirePace{};
  }
  return p;
}

uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

// Frames rule `r` may send now (at most one batch). A paced stream is due once the frames it
// has sent no longer exceed rate x elapsed, so by time t it has sent at most rate x t + batch;
// after a stall it catches up a batch per round, as the frames a real wire carried meanwhile
// would arrive. `next_ns` is lowered to when a stream that is not due will be.
uint32_t frames_due(const WirePace& p, const Rule& r, uint64_t now, uint64_t& next_ns) {
  const uint64_t elapsed = now - r.wire_start_ns;
  if (p.frames != 0 && r.wire_frame >= p.frames) return 0;
  if (p.seconds > 0 && static_cast<double>(elapsed) >= p.seconds * 1e9) return 0;
  if (p.rate > 0 &&
      static_cast<double>(r.wire_frame) > p.rate * static_cast<double>(elapsed) * 1e-9) {
    const auto at =
        r.wire_start_ns + static_cast<uint64_t>(static_cast<double>(r.wire_frame) / p.rate * 1e9);
    next_ns = std::min(next_ns, at);
    return 0;
  }
  const uint64_t left = p.frames != 0 ? p.frames - r.wire_frame : p.batch;
  return static_cast<uint32_t>(std::min<uint64_t>(p.batch, left));
}

// Sleeps until `until_ns` (CLOCK_MONOTONIC), at most 1 ms so that new rules start promptly,
// or until the device stops.
void wait_until(const Device& d, uint64_t until_ns) {
  const uint64_t now = monotonic_ns();
  const uint64_t ns = until_ns > now ? std::min<uint64_t>(until_ns - now, 1000000) : 0;
  const timespec ts{0, static_cast<long>(ns)};
  pollfd pf{d.stop_fd, POLLIN, 0};
  ppoll(&pf, 1, &ts, nullptr);
}

void put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}

void put_le64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    p[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint16_t ip_checksum(const uint8_t* h) {
  uint32_t s = 0;
  for (int i = 0; i < 20; i += 2)
    s += static_cast<uint32_t>(h[i] << 8 | h[i + 1]);
  while (s >> 16)
    s = (s & 0xffff) + (s >> 16);
  return static_cast<uint16_t>(~s);
}

// Ethernet + IPv4 + UDP headers for the stream a rule selects; unmatched fields get defaults.
void build_headers(const Rule& r, const WireParams& p, uint8_t* f) {
  const Key& v = r.match.val;
  const Key& m = r.match.mask;
  const uint32_t group = m.dst_ip ? v.dst_ip : htonl(0xef000001);
  const uint32_t src = m.src_ip ? v.src_ip : htonl(0xc0000201);
  const uint8_t* g = reinterpret_cast<const uint8_t*>(&group);
  const uint8_t mc[6] = {0x01, 0x00, 0x5e, static_cast<uint8_t>(g[1] & 0x7f), g[2], g[3]};
  memcpy(f, m.dmac[0] ? v.dmac : mc, 6);
  const uint8_t smac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
  memcpy(f + 6, smac, 6);
  put16(f + 12, 0x0800);
  uint8_t* ip = f + 14;
  memset(ip, 0, 20);
  ip[0] = 0x45;
  put16(ip + 2, static_cast<uint16_t>(20 + 8 + p.udp_payload()));
  ip[6] = 0x40;
  ip[8] = 64;
  ip[9] = IPPROTO_UDP;
  memcpy(ip + 12, &src, 4);
  memcpy(ip + 16, &group, 4);
  put16(ip + 10, ip_checksum(ip));
  uint8_t* udp = ip + 20;
  memcpy(udp, m.src_port ? &v.src_port : &v.dst_port, 2);
  if (!m.src_port) put16(udp, 4000);
  if (m.dst_port)
    memcpy(udp + 2, &v.dst_port, 2);
  else
    put16(udp + 2, 4001);
  put16(udp + 4, static_cast<uint16_t>(8 + p.udp_payload()));
  put16(udp + 6, 0);
}

// CODIF v3 header (doc/codif.md) for absolute frame index `n` of the stream.
void build_codif(const WireParams& p, uint64_t n, uint16_t thread, uint8_t* h) {
  const uint64_t period = n / p.frames_per_period;
  const uint64_t frame = n % p.frames_per_period;
  const uint64_t samples = static_cast<uint64_t>(p.payload) * 8 / (p.nbits * 2);
  put_le64(h, frame | (period * p.period_s) << 32);
  put_le64(h + 8,
           52ULL | uint64_t{p.nbits} << 8 | 1ULL << 18 | 3ULL << 24 | uint64_t{p.period_s} << 48);
  put_le64(h + 16, uint64_t{thread} | uint64_t{0x5356} << 48);
  put_le64(h + 24, 1ULL | 1ULL << 16 | uint64_t{p.payload / 8} << 32);
  put_le64(h + 32, samples * p.frames_per_period);
  put_le64(h + 40, 0xFEEDCAFEULL);
  put_le64(h + 48, 0);
  put_le64(h + 56, 0);
}

void put_le32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    p[i] = static_cast<uint8_t>(v >> (8 * i));
}

// VDIF header (doc/vdif.md: eight little-endian 32-bit words) for absolute frame index `n` of
// the stream, version 1, one real channel of 2-bit samples, epoch 52 (2026-01-01); with VTP,
// the 64-bit little-endian packet number `n` in front of it.
void build_vdif(const WireParams& p, uint64_t n, uint16_t thread, uint8_t* h) {
  if (p.format == WireFormat::vdif_vtp) {
    put_le64(h, n);
    h += 8;
  }
  put_le32(h, static_cast<uint32_t>(n / p.frames_per_period) & 0x3fffffffu);
  put_le32(h + 4, static_cast<uint32_t>(n % p.frames_per_period) | 52u << 24);
  put_le32(h + 8, (32 + p.payload) / 8 | 1u << 29);
  put_le32(h + 12, 0x5356u | uint32_t{thread & 0x3ffu} << 16 | 1u << 26);
  for (int w = 4; w < 8; ++w)
    put_le32(h + 4 * w, 0);
}

void build_frame(const WireParams& p, uint64_t n, uint16_t thread, uint8_t* h) {
  if (p.format == WireFormat::codif)
    build_codif(p, n, thread, h);
  else
    build_vdif(p, n, thread, h);
}

// Whether deliver_locked would complete a WR of `q` now (hold=1). Caller holds q.lock.
bool can_take(const Qp& q) {
  return (q.state == IBV_QPS_RTR || q.state == IBV_QPS_RTS) && q.rq_head != q.rq_tail;
}

}  // namespace

void run_wire_engine(Device& d) {
  const WireParams p = wire_params();
  const WirePace pace = wire_pace();
  const uint32_t frame_len = 14 + 20 + 8 + p.udp_payload();
  while (!d.stopping.load(std::memory_order_relaxed)) {
    bool any = false, sent = false, held = false;
    uint64_t next_ns = UINT64_MAX;
    {
      std::lock_guard<std::mutex> g(d.mu);
      uint16_t thread = 0;
      const uint64_t now = monotonic_ns();
      for (Rule* r : d.rules) {
        if (r->type != IBV_FLOW_ATTR_NORMAL) continue;
        any = true;
        if (r->wire_template.empty()) {
          r->wire_template.assign(frame_len, 0);
          build_headers(*r, p, r->wire_template.data());
          r->wire_start_ns = now;
        }
        const uint32_t n = frames_due(pace, *r, now, next_ns);
        const uint16_t stream_thread = thread++;
        if (n == 0) continue;
        uint8_t* buf = r->wire_template.data();
        Frame f{buf, frame_len, realtime_ns(), true, false};
        // One lock round per burst, as a NIC writes completions in bursts.
        std::lock_guard<Spin> q(r->qp->lock);
        for (uint32_t burst = 0; burst < n; ++burst) {
          if (pace.hold && !can_take(*r->qp)) {
            held = true;
            break;
          }
          build_frame(p, r->wire_frame++, stream_thread, buf + 42);
          deliver_locked(*r->qp, f, true);
          sent = true;
        }
      }
      d.publish_counters(!sent);
    }
    if (!any) {
      pollfd pf{d.stop_fd, POLLIN, 0};
      poll(&pf, 1, 1);
    } else if (held && !sent) {
      sched_yield();  // hold=1: the receiver re-posts soon; a sleep would idle it
    } else if (!sent) {
      wait_until(d, next_ns);  // every stream paced, done, or not yet due
    }
  }
}

}  // namespace sv
