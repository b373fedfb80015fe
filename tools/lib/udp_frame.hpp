// Ethernet + IPv4 + UDP headers for a UDP payload, as a NIC would put them on the wire: what
// `rocecap gen --pcap` writes around each datagram.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace rocecap::tools {

inline constexpr std::size_t kEthIpv4UdpBytes = 14 + 20 + 8;

struct UdpEndpoints {
  uint32_t src_ip = 0;  // host byte order
  uint32_t dst_ip = 0;
  uint16_t src_port = 0;
  uint16_t dst_port = 0;
};

// A fixed locally administered unicast MAC for a source address: 02:00 + the four address bytes.
std::array<uint8_t, 6> source_mac(uint32_t src_ip) noexcept;

// Writes the 42 header bytes for `payload`: destination MAC from the multicast group (or
// 02:00 + address for unicast), IPv4 with DF clear, `ttl`, `ip_id` and a correct header
// checksum, UDP with a correct checksum.
void write_udp_headers(const UdpEndpoints& ep, uint16_t ip_id, uint8_t ttl,
                       std::span<const std::byte> payload,
                       std::span<std::byte, kEthIpv4UdpBytes> out) noexcept;

// Internet checksum helpers (RFC 1071). checksum_add returns the running ones'-complement sum
// of big-endian 16-bit words, folded to 16 bits (so small terms may be added to it); every
// span but the last must have an even length.
uint32_t checksum_add(uint32_t sum, std::span<const std::byte> bytes) noexcept;
uint16_t checksum_fold(uint32_t sum) noexcept;

}  // namespace rocecap::tools
