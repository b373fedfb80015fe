// Synthetic wire mode (SOFTVERBS_DEVICES=svw=wire): posted WRs complete with valid CODIF
// frames of the stream the flow selects; only the header SGE is written; frames the RQ had no
// room for are counted in out_of_buffer and show as gaps in the CODIF frame numbers; RESET
// while the wire keeps producing leaves no completion of the QP behind. `pace ...`: the rate
// control of SOFTVERBS_WIRE_PACE (pace_test); `hold N`: its hold=1 (hold_test). With
// SOFTVERBS_WIRE_FORMAT=vdif or vdif-vtp the same checks hold for 1 KiB VDIF frames (doc/vdif.md),
// the VTP number being the frame's index. Exit 0 = pass, 1 = fail, 77 = cannot run here (no
// CAP_NET_RAW).
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "wire_rig.hpp"

namespace {

using namespace wire_rig;
constexpr uint32_t kGroup = 0xef110001, kSrc = 0xc0000205;  // 239.17.0.1 from 192.0.2.5
constexpr uint16_t kPort = 36001;

uint64_t le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = v << 8 | p[i];
  return v;
}

uint64_t read_oob() {
  const char* root = getenv("SOFTVERBS_SYSFS_ROOT");
  std::ifstream in(std::string(root ? root : "/nonexistent") + "/class/infiniband/" + kDev +
                   "/ports/1/hw_counters/out_of_buffer");
  uint64_t v = 0;
  in >> v;
  return v;
}

struct Flow {
  ibv_flow_attr attr;
  ibv_flow_spec_ipv4 ip;
  ibv_flow_spec_tcp_udp udp;
};

Flow stream_flow() {
  Flow f{};
  f.attr.type = IBV_FLOW_ATTR_NORMAL;
  f.attr.size = sizeof f;
  f.attr.num_of_specs = 2;
  f.attr.port = 1;
  f.ip.type = IBV_FLOW_SPEC_IPV4;
  f.ip.size = sizeof f.ip;
  f.ip.val.src_ip = htonl(kSrc);
  f.ip.val.dst_ip = htonl(kGroup);
  f.ip.mask.src_ip = f.ip.mask.dst_ip = 0xffffffff;
  f.udp.type = IBV_FLOW_SPEC_UDP;
  f.udp.size = sizeof f.udp;
  f.udp.val.dst_port = htons(kPort);
  f.udp.mask.dst_port = 0xffff;
  return f;
}

uint32_t le32(const uint8_t* p) {
  return static_cast<uint32_t>(le64(p));  // the low 4 of 8 readable bytes (slots are 128 bytes)
}

// SOFTVERBS_WIRE_FORMAT as the wire reads it: 0 codif, 1 vdif, 2 vdif-vtp.
int wire_format() {
  const char* f = getenv("SOFTVERBS_WIRE_FORMAT");
  if (f == nullptr) return 0;
  return strcmp(f, "vdif") == 0 ? 1 : strcmp(f, "vdif-vtp") == 0 ? 2 : 0;
}
const int kFormat = wire_format();
constexpr uint32_t kVdifData = 1024;  // the wire's VDIF default

// A VDIF frame (after the VTP number, if any): version 1, 2-bit real samples, one channel,
// 1024 data bytes, 100000 frames per second; returns its absolute index, which a VTP number
// must equal.
uint64_t check_vdif(const uint8_t* h) {
  const uint8_t* v = h + 42 + (kFormat == 2 ? 8 : 0);
  expect((le32(v + 8) & 0xffffff) * 8 == 32 + kVdifData, "VDIF frame length, header included");
  expect(le32(v + 8) >> 29 == 1 && (le32(v + 8) >> 24 & 0x1f) == 0, "VDIF version 1, 1 channel");
  expect((le32(v + 12) >> 26 & 0x1f) == 1 && le32(v + 12) >> 31 == 0, "VDIF 2-bit real samples");
  expect(le32(v) >> 30 == 0, "VDIF valid, not legacy");
  const uint32_t frame = le32(v + 4) & 0xffffff;
  expect(frame < 100000, "VDIF frame number within the second");
  const uint64_t index = uint64_t{le32(v) & 0x3fffffff} * 100000 + frame;
  if (kFormat == 2) expect(le64(h + 42) == index, "VTP number is the frame's index");
  return index;
}

// Checks one completion's frame; returns its absolute frame index.
uint64_t check_frame(const Rig& rig, const ibv_wc& wc) {
  const auto slot = static_cast<uint32_t>(wc.wr_id);
  const uint8_t* h = &rig.hdr[slot * kHdr];
  expect(wc.status == IBV_WC_SUCCESS, "status");
  const uint32_t udp_payload =
      kFormat == 0 ? 64 + kPayload : (kFormat == 2 ? 8 : 0) + 32 + kVdifData;
  expect(wc.byte_len == 14 + 20 + 8 + udp_payload, "byte_len is the whole frame");
  uint32_t dst, src;
  uint16_t dport;
  memcpy(&src, h + 26, 4);
  memcpy(&dst, h + 30, 4);
  memcpy(&dport, h + 36, 2);
  expect(ntohl(dst) == kGroup && ntohl(src) == kSrc && ntohs(dport) == kPort,
         "headers of the flow's stream");
  const uint8_t* p = &rig.pl[static_cast<size_t>(slot) * kPayload];
  if (kFormat != 0) {
    expect(p[0] == 0xab && p[kPayload - 1] == 0xab, "payload SGE left as initialised");
    return check_vdif(h);
  }
  const uint8_t* c = h + 42;
  expect((le64(c + 40) & 0xffffffff) == 0xFEEDCAFE, "CODIF sync word");
  expect(((le64(c + 24) >> 32) * 8) == kPayload, "CODIF data array length");
  expect(p[0] == 0xab && p[kPayload - 1] == 0xab, "payload SGE left as initialised");
  const uint64_t fpp = le64(c + 32) / (kPayload * 8 / 16);  // samples per frame: 8-bit complex
  return (le64(c) >> 32) * fpp + (le64(c) & 0xffffffff);    // 1 s period
}

// Polls `total` completions, re-posting each slot; returns the frames lost in between.
uint64_t capture(Rig& rig, int total) {
  int got = 0;
  uint64_t last = 0, gaps = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (got < total && std::chrono::steady_clock::now() < deadline) {
    ibv_wc wc[32];
    const int n = ibv_poll_cq(rig.cq, 32, wc);
    expect(n >= 0, "poll_cq");
    for (int i = 0; i < n; ++i, ++got) {
      const uint64_t index = check_frame(rig, wc[i]);
      expect(got == 0 || index > last, "frames advance");
      if (got > 0) gaps += index - last - 1;
      last = index;
      expect(rig.post(static_cast<uint32_t>(wc[i].wr_id)) == 0, "repost");
    }
  }
  expect(got >= total, "every completion arrived");
  return gaps;
}

// RESET while the wire keeps completing: nothing of the QP survives, and it works again.
void reset_under_load(Rig& rig) {
  expect(rig.to(IBV_QPS_RESET), "RESET");
  ibv_wc wc[64];
  int stale = 0;
  for (int i = 0; i < 1000; ++i)
    stale += ibv_poll_cq(rig.cq, 64, wc);
  expect(stale == 0, "completions survived RESET");
  rig.arm();
  int again = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (again < static_cast<int>(kDepth) && std::chrono::steady_clock::now() < until) {
    const int n = ibv_poll_cq(rig.cq, 64, wc);
    for (int i = 0; i < n; ++i)
      expect(wc[i].status == IBV_WC_SUCCESS, "status after RESET");
    again += n > 0 ? n : 0;
  }
  expect(again == static_cast<int>(kDepth), "every WR posted after RESET completed");
}

// SOFTVERBS_WIRE_PACE (the caller sets it to rate=R,frames=N|seconds=S,batch=B and passes the
// same numbers): since the flow was created the stream never runs ahead of R frames/s (by
// time t at most R x t + B frames, completions plus out_of_buffer), it falls silent at its
// bound, and with frames=N exactly N frames went out: every count is checked against a
// bound that holds however late the wire thread runs, so a loaded host cannot fail it.
struct Pace {
  double rate = 0, seconds = 0;
  uint64_t frames = 0, batch = 0;
};

int pace_test(const Pace& pace) {
  Rig rig(0xab);
  if (int rc = rig.open_qp()) return rc;
  rig.arm();
  const uint64_t oob0 = read_oob();
  Flow f = stream_flow();
  const auto t0 = std::chrono::steady_clock::now();  // the wire's clock starts after this
  rig.flow = ibv_create_flow(rig.qp, reinterpret_cast<ibv_flow_attr*>(&f));
  expect(rig.flow != nullptr, "create_flow");
  uint64_t got = 0, highest = 0, over = 0;
  auto quiet_since = t0;
  const auto deadline = t0 + std::chrono::seconds(30);
  for (auto now = t0; now < deadline; now = std::chrono::steady_clock::now()) {
    ibv_wc wc[32];
    const int n = ibv_poll_cq(rig.cq, 32, wc);
    expect(n >= 0, "poll_cq");
    for (int i = 0; i < n; ++i, ++got) {
      highest = std::max(highest, check_frame(rig, wc[i]));
      expect(rig.post(static_cast<uint32_t>(wc[i].wr_id)) == 0, "repost");
    }
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (static_cast<double>(got) > pace.rate * t + static_cast<double>(pace.batch)) ++over;
    if (n > 0) quiet_since = now;
    // Silent for 0.5 s after the bound could have been reached: the stream has stopped.
    const double bound_s =
        pace.seconds > 0 ? pace.seconds : static_cast<double>(pace.frames) / pace.rate;
    if (got > 0 && t > bound_s && now - quiet_since > std::chrono::milliseconds(500)) break;
  }
  expect(over == 0, "the wire ran ahead of its rate (more than rate x t + batch frames)");
  expect(got > 0, "the paced wire sent frames");
  uint64_t oob = read_oob() - oob0;
  for (int i = 0; i < 100 && pace.frames != 0 && got + oob < pace.frames; ++i) {
    usleep(10000);
    oob = read_oob() - oob0;
  }
  ibv_wc wc[32];
  expect(ibv_poll_cq(rig.cq, 32, wc) == 0, "the wire fell silent at its bound");
  const uint64_t sent = got + oob;
  if (pace.frames != 0) {
    expect(sent == pace.frames, "frames=N: exactly N frames sent (completions + out_of_buffer)");
    expect(highest < pace.frames, "frames=N: no CODIF frame beyond N-1");
  }
  if (pace.seconds > 0)
    expect(static_cast<double>(sent) <= pace.rate * pace.seconds + static_cast<double>(pace.batch),
           "seconds=S: at most rate x S + batch frames");
  printf("wire pace: %llu completions + %llu out_of_buffer; rate %.0f/s frames %llu seconds %.2f\n",
         static_cast<unsigned long long>(got), static_cast<unsigned long long>(oob), pace.rate,
         static_cast<unsigned long long>(pace.frames), pace.seconds);
  if (failures) fprintf(stderr, "%d failed checks\n", failures);
  return failures ? 1 : 0;
}

// SOFTVERBS_WIRE_PACE=hold=1,frames=N (the caller sets it and passes N): a frame that finds
// no posted WR waits for one. The test stops receiving for 200 ms once the RQ is armed, long
// enough for an unheld wire to drop thousands of frames (the plain wire test shows it does),
// then takes and re-posts every WR: all N frames arrive, in order and without a gap, the wire
// falls silent after them, and out_of_buffer does not move.
int hold_test(uint64_t frames) {
  Rig rig(0xab);
  if (int rc = rig.open_qp()) return rc;
  rig.arm();
  const uint64_t oob0 = read_oob();
  Flow f = stream_flow();
  rig.flow = ibv_create_flow(rig.qp, reinterpret_cast<ibv_flow_attr*>(&f));
  expect(rig.flow != nullptr, "create_flow");
  usleep(200000);  // every posted WR is filled; the next frames must wait
  // capture() checks each frame and that they advance; no gap and no out_of_buffer (below)
  // means frames 0..N-1 all arrived in order.
  const uint64_t gaps = capture(rig, static_cast<int>(frames));
  expect(gaps == 0, "hold=1: no frame number skipped");
  usleep(300000);
  ibv_wc wc[32];
  expect(ibv_poll_cq(rig.cq, 32, wc) == 0, "hold=1: silent after N frames");
  const uint64_t oob = read_oob() - oob0;
  expect(oob == 0, "hold=1: nothing counted in out_of_buffer");
  printf("wire hold: %llu frames, %llu skipped, out_of_buffer +%llu\n",
         static_cast<unsigned long long>(frames), static_cast<unsigned long long>(gaps),
         static_cast<unsigned long long>(oob));
  if (failures) fprintf(stderr, "%d failed checks\n", failures);
  return failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "hold") == 0) return hold_test(strtoull(argv[2], nullptr, 10));
  if (argc == 6 && strcmp(argv[1], "pace") == 0) {
    // pace RATE FRAMES SECONDS BATCH: the values of SOFTVERBS_WIRE_PACE.
    return pace_test({atof(argv[2]), atof(argv[4]), strtoull(argv[3], nullptr, 10),
                      strtoull(argv[5], nullptr, 10)});
  }
  Rig rig(0xab);  // the payload SGE must stay as initialised
  if (int rc = rig.open_qp()) return rc;
  rig.arm();
  const uint64_t oob0 = read_oob();
  Flow f = stream_flow();
  rig.flow = ibv_create_flow(rig.qp, reinterpret_cast<ibv_flow_attr*>(&f));
  expect(rig.flow != nullptr, "create_flow");
  const uint64_t gaps = capture(rig, 20000);
  // The counter file trails the wire by up to a millisecond: wait (bounded) for it.
  uint64_t oob = read_oob() - oob0;
  for (int i = 0; i < 200 && oob < gaps; ++i) {
    usleep(10000);
    oob = read_oob() - oob0;
  }
  expect(oob >= gaps, "frames missing from the sequence are counted in out_of_buffer");
  printf("wire: %llu frames dropped for want of a WR, out_of_buffer +%llu\n",
         static_cast<unsigned long long>(gaps), static_cast<unsigned long long>(oob));
  reset_under_load(rig);
  if (failures) fprintf(stderr, "%d failed checks\n", failures);
  return failures ? 1 : 0;
}
