// Test frames: Ethernet/IPv4/UDP datagrams carrying a CODIF frame whose data bytes are a
// simple function of the frame index, so tests can build the expected bytes independently.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "capture/codif/header.hpp"
#include "capture/net/udp_builder.hpp"
#include "capture/stream_pipeline.hpp"
#include "capture/vdif/header.hpp"

namespace rocecap::test {

inline constexpr uint32_t kGroup = 0xEF110001, kSrcA = 0xC000020B, kSrcB = 0xC000020C;
inline constexpr uint16_t kPort = 36001;
inline constexpr uint32_t kPayload = 1024;  // CODIF data bytes per frame
inline constexpr capture::codif::Timing kTiming{kPayload, 1000,
                                                1};  // 8-bit real, 1000 frames per second

inline capture::codif::Header base_header(uint32_t sync = capture::codif::kSyncV3) {
  capture::codif::Header h;
  h.sync = sync;
  h.nbits = 8;
  h.nchan = 1;
  h.period = 1;
  h.data_words = kPayload / 8;
  h.total_samples = 1000 * kPayload;
  h.version = 3;
  return h;
}

inline std::byte data_byte(uint64_t index, uint32_t i) {
  return std::byte((index + i) & 0xFF);
}

// The datagram of CODIF frame `index` from `src` to `group`:kPort.
inline std::vector<std::byte> frame(uint32_t src, uint64_t index,
                                    uint32_t sync = capture::codif::kSyncV3,
                                    uint32_t group = kGroup) {
  const capture::codif::Header h = capture::codif::at_index(base_header(sync), kTiming, index);
  const std::size_t udp_payload = capture::codif::kHeaderBytes + kPayload;
  capture::net::UdpFrameSpec spec;
  spec.dst_mac = capture::net::multicast_mac(group);
  spec.src_ip = src;
  spec.dst_ip = group;
  spec.src_port = 40000;
  spec.dst_port = kPort;
  std::vector<std::byte> f(capture::net::udp_header_bytes(spec) + udp_payload);
  capture::net::write_udp_headers(spec, udp_payload, f);
  capture::codif::encode(h, std::span<std::byte, 64>(f.data() + 42, 64));
  for (uint32_t i = 0; i < kPayload; ++i)
    f[42 + 64 + i] = data_byte(index, i);
  return f;
}

// Frame `index` of `src` with its CODIF header changed by `edit` before it is encoded.
template <class Edit>
std::vector<std::byte> edited(uint32_t src, uint64_t index, Edit edit) {
  auto f = frame(src, index);
  capture::codif::Header h = capture::codif::at_index(base_header(), kTiming, index);
  edit(h);
  capture::codif::encode(h, std::span<std::byte, 64>(f.data() + 42, 64));
  return f;
}

// A VDIF frame over VTP: the 8-byte packet sequence number `psn` (unless vtp is false), then
// frame `index` (seconds = index / fps, frame number = index % fps) of `thread`, `data_bytes`
// of zero data.
struct VdifDatagram {
  uint32_t group = kGroup, src = kSrcA;
  uint16_t port = kPort;
  uint64_t fps = 100;
  std::size_t data_bytes = 256;
  uint8_t epoch = 50;
  bool legacy = false;
  bool vtp = true;
};
// A VDIF stream of `src` to kGroup:kPort at VdifDatagram's default rate (100 frames per second)
// that records `thread`, with small rings (64 slots of 128 + 1024 bytes, no huge pages or
// locking) and a reorder window of 4.
inline capture::StreamSpec vdif_spec(uint32_t src, bool vtp,
                                     uint32_t thread = capture::VdifSpec::kAnyThread) {
  capture::StreamSpec s;
  s.key = {kGroup, kPort, src};
  s.format = capture::StreamFormat::vdif;
  s.vdif.rate.frames_per_second = VdifDatagram{}.fps;
  s.vdif.vtp = vtp;
  s.vdif.thread = thread;
  s.ring.slots = 64;
  s.ring.header_slot_bytes = 128;
  s.ring.payload_slot_bytes = 1024;
  s.ring.memory.huge_pages = capture::memory::Want::no;
  s.ring.memory.lock = capture::memory::Want::no;
  s.sequencer.reorder_window = 4;
  return s;
}

inline std::vector<std::byte> vdif_datagram(const VdifDatagram& d, uint64_t psn, uint16_t thread,
                                            uint64_t index) {
  capture::vdif::Header h;
  h.legacy = d.legacy;
  h.thread_id = thread;
  h.seconds = static_cast<uint32_t>(index / d.fps);
  h.frame = static_cast<uint32_t>(index % d.fps);
  h.epoch = d.epoch;
  h.nbits = 2;
  h.frame_words = static_cast<uint32_t>((h.header_bytes() + d.data_bytes) / 8);
  const std::size_t vtp = d.vtp ? capture::vdif::kVtpBytes : 0;
  const std::size_t udp = vtp + h.frame_bytes();
  capture::net::UdpFrameSpec s;
  s.dst_mac = capture::net::multicast_mac(d.group);
  s.src_ip = d.src;
  s.dst_ip = d.group;
  s.src_port = d.port;
  s.dst_port = d.port;
  std::vector<std::byte> f(capture::net::udp_header_bytes(s) + udp);
  capture::net::write_udp_headers(s, udp, f);
  std::byte* p = f.data() + capture::net::udp_header_bytes(s);
  if (d.vtp) capture::vdif::put_vtp_sequence(psn, std::span<std::byte, 8>(p, 8));
  std::array<std::byte, capture::vdif::kHeaderBytes> raw{};
  capture::vdif::encode(h, raw);
  std::copy_n(raw.data(), h.header_bytes(), p + vtp);
  return f;
}

}  // namespace rocecap::test
