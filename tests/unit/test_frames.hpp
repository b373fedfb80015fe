// Test frames: Ethernet/IPv4/UDP datagrams carrying a CODIF frame whose data bytes are a
// simple function of the frame index, so tests can build the expected bytes independently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "capture/codif/header.hpp"

namespace rocecap::test {

inline constexpr uint32_t kGroup = 0xEF110001, kSrcA = 0xC000020B, kSrcB = 0xC000020C;
inline constexpr uint16_t kPort = 36001;
inline constexpr uint32_t kPayload = 1024;                  // CODIF data bytes per frame
inline constexpr codif::Timing kTiming{kPayload, 1000, 1};  // 8-bit real, 1000 frames per second

inline codif::Header base_header(uint32_t sync = codif::kSyncV3) {
  codif::Header h;
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
inline std::vector<std::byte> frame(uint32_t src, uint64_t index, uint32_t sync = codif::kSyncV3,
                                    uint32_t group = kGroup) {
  const codif::Header h = codif::at_index(base_header(sync), kTiming, index);
  const std::size_t udp_payload = codif::kHeaderBytes + kPayload;
  std::vector<std::byte> f(14 + 20 + 8 + udp_payload);
  auto b = [&](std::size_t i, unsigned v) { f[i] = std::byte(v & 0xFF); };
  b(0, 0x01), b(1, 0x00), b(2, 0x5e), b(12, 0x08), b(13, 0x00);
  b(14, 0x45);
  b(16, (20 + 8 + udp_payload) >> 8), b(17, 20 + 8 + udp_payload);
  b(22, 64), b(23, 17);
  for (int i = 0; i < 4; ++i)
    b(26 + i, src >> (24 - 8 * i)), b(30 + i, group >> (24 - 8 * i));
  b(34, 0x9c), b(35, 0x40), b(36, kPort >> 8), b(37, kPort);
  b(38, (8 + udp_payload) >> 8), b(39, 8 + udp_payload);
  codif::encode(h, std::span<std::byte, 64>(f.data() + 42, 64));
  for (uint32_t i = 0; i < kPayload; ++i)
    f[42 + 64 + i] = data_byte(index, i);
  return f;
}

}  // namespace rocecap::test
