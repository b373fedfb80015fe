// Test frames: Ethernet/IPv4/UDP datagrams carrying a CODIF frame whose data bytes are a
// simple function of the frame index, so tests can build the expected bytes independently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "capture/codif/header.hpp"
#include "capture/net/udp_builder.hpp"

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

}  // namespace rocecap::test
