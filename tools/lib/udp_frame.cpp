#include "tools/lib/udp_frame.hpp"

#include <bit>
#include <cstring>

#include "capture/net/packet.hpp"
#include "capture/net/udp_builder.hpp"

namespace rocecap::tools {

std::array<uint8_t, 6> source_mac(uint32_t ip) noexcept {
  return {0x02,
          0x00,
          static_cast<uint8_t>(ip >> 24),
          static_cast<uint8_t>(ip >> 16),
          static_cast<uint8_t>(ip >> 8),
          static_cast<uint8_t>(ip)};
}

uint32_t checksum_add(uint32_t sum, std::span<const std::byte> b) noexcept {
  // A ones'-complement sum does not depend on byte order (RFC 1071, 2(B)): add the data as
  // native 32-bit words (4x fewer steps than 16-bit big-endian words), fold, and swap once.
  uint64_t s = 0;
  const std::byte* p = b.data();
  std::size_t i = 0;
  for (; i + 4 <= b.size(); i += 4) {
    uint32_t w;
    std::memcpy(&w, p + i, 4);
    s += w;
  }
  if (i + 2 <= b.size()) {
    uint16_t w;
    std::memcpy(&w, p + i, 2);
    s += w;
    i += 2;
  }
  if (i < b.size()) {  // odd length: the last byte is the high byte of a zero-padded word
    const uint8_t last = std::to_integer<uint8_t>(p[i]);
    s += std::endian::native == std::endian::little ? uint64_t{last} : uint64_t{last} << 8;
  }
  while (s >> 16)
    s = (s & 0xFFFF) + (s >> 16);
  auto native = static_cast<uint16_t>(s);
  if constexpr (std::endian::native == std::endian::little) native = __builtin_bswap16(native);
  uint32_t total = sum + native;
  while (total >> 16)
    total = (total & 0xFFFF) + (total >> 16);
  return total;
}

uint16_t checksum_fold(uint32_t sum) noexcept {
  while (sum >> 16)
    sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(~sum & 0xFFFF);
}

void write_udp_headers(const UdpEndpoints& ep, uint16_t ip_id, uint8_t ttl,
                       std::span<const std::byte> payload,
                       std::span<std::byte, kEthIpv4UdpBytes> out) noexcept {
  capture::net::UdpFrameSpec spec;
  spec.dst_mac = capture::net::is_multicast(ep.dst_ip) ? capture::net::multicast_mac(ep.dst_ip)
                                                       : source_mac(ep.dst_ip);
  spec.src_mac = source_mac(ep.src_ip);
  spec.ttl = ttl;
  spec.ip_id = ip_id;
  spec.src_ip = ep.src_ip;
  spec.dst_ip = ep.dst_ip;
  spec.src_port = ep.src_port;
  spec.dst_port = ep.dst_port;
  // Untagged and without options the headers are exactly kEthIpv4UdpBytes: this cannot fail.
  (void)capture::net::write_udp_headers(spec, payload.size(), out);

  // The UDP checksum over the pseudo-header (addresses, protocol, UDP length), the UDP header
  // and the payload: receivers that verify it see a real datagram.
  const std::byte* ip = out.data() + capture::net::kEthHeaderBytes;
  std::byte* udp = out.data() + capture::net::kEthHeaderBytes + capture::net::kIpv4MinHeaderBytes;
  const auto udp_len = static_cast<uint16_t>(capture::net::kUdpHeaderBytes + payload.size());
  uint32_t sum = checksum_add(0, std::span<const std::byte>(ip + 12, 8));
  sum += capture::net::kIpProtoUdp + udp_len;
  sum = checksum_add(sum, std::span<const std::byte>(udp, capture::net::kUdpHeaderBytes));
  sum = checksum_add(sum, payload);
  const uint16_t c = checksum_fold(sum);
  const uint16_t wire = c == 0 ? 0xFFFF : c;  // 0 would mean "no checksum"
  udp[6] = std::byte(wire >> 8);
  udp[7] = std::byte(wire & 0xFF);
}

}  // namespace rocecap::tools
