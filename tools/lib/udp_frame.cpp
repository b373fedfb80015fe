#include "tools/lib/udp_frame.hpp"

#include <bit>
#include <cstring>

#include "capture/net/packet.hpp"

namespace rocecap::tools {
namespace {

void put16(std::byte* p, uint16_t v) noexcept {
  p[0] = std::byte(v >> 8);
  p[1] = std::byte(v & 0xFF);
}

void put32(std::byte* p, uint32_t v) noexcept {
  put16(p, static_cast<uint16_t>(v >> 16));
  put16(p + 2, static_cast<uint16_t>(v & 0xFFFF));
}

void put_mac(std::byte* p, const std::array<uint8_t, 6>& mac) noexcept {
  for (std::size_t i = 0; i < 6; ++i)
    p[i] = std::byte{mac[i]};
}

}  // namespace

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
  std::byte* eth = out.data();
  put_mac(eth,
          net::is_multicast(ep.dst_ip) ? net::multicast_mac(ep.dst_ip) : source_mac(ep.dst_ip));
  put_mac(eth + 6, source_mac(ep.src_ip));
  put16(eth + 12, net::kEtherTypeIpv4);

  std::byte* ip = eth + 14;
  const auto udp_len = static_cast<uint16_t>(net::kUdpHeaderBytes + payload.size());
  ip[0] = std::byte{0x45};
  ip[1] = std::byte{0};
  put16(ip + 2, static_cast<uint16_t>(20 + udp_len));
  put16(ip + 4, ip_id);
  put16(ip + 6, 0);  // no flags: fragmentation is not our business in a file
  ip[8] = std::byte{ttl};
  ip[9] = std::byte{net::kIpProtoUdp};
  put16(ip + 10, 0);
  put32(ip + 12, ep.src_ip);
  put32(ip + 16, ep.dst_ip);
  put16(ip + 10, checksum_fold(checksum_add(0, std::span<const std::byte>(ip, 20))));

  std::byte* udp = ip + 20;
  put16(udp, ep.src_port);
  put16(udp + 2, ep.dst_port);
  put16(udp + 4, udp_len);
  put16(udp + 6, 0);
  // Pseudo-header: addresses, protocol, UDP length; then the UDP header and payload.
  uint32_t sum = checksum_add(0, std::span<const std::byte>(ip + 12, 8));
  sum += net::kIpProtoUdp + udp_len;
  sum = checksum_add(sum, std::span<const std::byte>(udp, 8));
  sum = checksum_add(sum, payload);
  uint16_t c = checksum_fold(sum);
  put16(udp + 6, c == 0 ? 0xFFFF : c);  // 0 would mean "no checksum"
}

}  // namespace rocecap::tools
