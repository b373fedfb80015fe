// Writes Ethernet / VLAN / IPv4 / UDP headers in front of a payload: for tests, fuzz seeds,
// benchmarks and tools that synthesize frames (e.g. pcap output of generated traffic).
// Not a hot-path API, but it still allocates nothing.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "capture/net/packet.hpp"

namespace rocecap::capture::net {

struct VlanTag {
  uint16_t tpid = kEtherTypeVlan;  // 0x8100, or 0x88A8 for an outer 802.1ad tag
  uint16_t tci = 0;                // PCP (3 bits), DEI (1), VID (12)
};

struct UdpFrameSpec {
  std::array<uint8_t, 6> dst_mac{};
  std::array<uint8_t, 6> src_mac{};
  std::array<VlanTag, kMaxVlanTags> vlans{};  // outermost first
  uint8_t vlan_count = 0;
  uint8_t ip_option_words = 0;  // 0..10 four-byte words of IPv4 options (IHL = 5 + this)
  uint8_t ttl = 1;
  uint16_t ip_id = 0;
  uint32_t src_ip = 0;  // host byte order
  uint32_t dst_ip = 0;
  uint16_t src_port = 0;
  uint16_t dst_port = 0;
};

// Bytes of headers the spec produces, i.e. the payload's offset in the frame.
std::size_t udp_header_bytes(const UdpFrameSpec& spec) noexcept;

// Writes the headers for a UDP payload of `payload_bytes` into the start of `out`; the payload
// itself is the caller's. IPv4 header checksum is computed, UDP checksum left 0 (allowed for
// IPv4), IPv4 options are NOPs. Returns the header bytes written, or 0 when `out` is too small,
// the spec has too many tags / option words, or the datagram would exceed 65535 bytes.
std::size_t write_udp_headers(const UdpFrameSpec& spec, std::size_t payload_bytes,
                              std::span<std::byte> out) noexcept;

// RFC 1071 one's-complement checksum of `bytes` (even length expected for IPv4 headers).
uint16_t internet_checksum(std::span<const std::byte> bytes) noexcept;

}  // namespace rocecap::capture::net
