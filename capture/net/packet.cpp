#include "capture/net/packet.hpp"

#include <charconv>
#include <cstring>

namespace rocecap::capture::net {
namespace {

inline uint16_t load_be16(const std::byte* p) noexcept {
  return static_cast<uint16_t>((std::to_integer<uint16_t>(p[0]) << 8) |
                               std::to_integer<uint16_t>(p[1]));
}

inline uint32_t load_be32(const std::byte* p) noexcept {
  return (uint32_t{load_be16(p)} << 16) | load_be16(p + 2);
}

// Reports a header that does not fit: truncated if the wire frame itself is too short,
// headers_beyond_split if only the readable head is.
inline ParseError missing(std::size_t need, std::size_t wire_bytes) noexcept {
  return need > wire_bytes ? ParseError::truncated : ParseError::headers_beyond_split;
}

}  // namespace

std::string_view to_string(ParseError e) noexcept {
  switch (e) {
    case ParseError::ok:
      return "ok";
    case ParseError::truncated:
      return "truncated";
    case ParseError::too_many_vlans:
      return "too_many_vlans";
    case ParseError::not_ipv4:
      return "not_ipv4";
    case ParseError::bad_ip_header:
      return "bad_ip_header";
    case ParseError::ip_options_too_long:
      return "ip_options_too_long";
    case ParseError::bad_ip_length:
      return "bad_ip_length";
    case ParseError::fragment:
      return "fragment";
    case ParseError::not_udp:
      return "not_udp";
    case ParseError::bad_udp_length:
      return "bad_udp_length";
    case ParseError::headers_beyond_split:
      return "headers_beyond_split";
    case ParseError::count_:
      break;
  }
  return "unknown";
}

ParseError parse_udp(std::span<const std::byte> head, std::size_t wire_bytes,
                     UdpFrame& out) noexcept {
  const std::size_t avail = head.size() < wire_bytes ? head.size() : wire_bytes;
  const std::byte* p = head.data();
  if (avail < kEthHeaderBytes) return missing(kEthHeaderBytes, wire_bytes);

  // Locals until the frame is accepted: `out` is written once, at the end.
  std::size_t off = 12;
  uint16_t ethertype = load_be16(p + off);
  uint8_t vlans = 0;
  uint16_t vlan_id = 0;
  if (ethertype != kEtherTypeIpv4) {  // untagged IPv4 skips the tag loop
    while (ethertype == kEtherTypeVlan || ethertype == kEtherTypeQinQ) {
      if (vlans == kMaxVlanTags) return ParseError::too_many_vlans;
      if (avail < off + 2 + kVlanTagBytes) return missing(off + 2 + kVlanTagBytes, wire_bytes);
      if (vlans == 0) vlan_id = load_be16(p + off + 2) & 0x0FFF;
      ++vlans;
      off += kVlanTagBytes;
      ethertype = load_be16(p + off);
    }
    if (ethertype != kEtherTypeIpv4) return ParseError::not_ipv4;
  }
  const std::size_t ip = off + 2;
  if (avail < ip + kIpv4MinHeaderBytes) return missing(ip + kIpv4MinHeaderBytes, wire_bytes);

  const uint8_t ver_ihl = std::to_integer<uint8_t>(p[ip]);
  if ((ver_ihl >> 4) != 4) return ParseError::not_ipv4;
  const std::size_t ihl = std::size_t{ver_ihl & 0x0Fu} * 4;
  if (ihl < kIpv4MinHeaderBytes) return ParseError::bad_ip_header;
  const std::size_t ip_total = load_be16(p + ip + 2);
  // A header longer than the wire frame also fails the total-length test; one branch for both.
  if (ip_total < ihl || ip + ip_total > wire_bytes) {
    return ip + ihl > wire_bytes ? ParseError::ip_options_too_long : ParseError::bad_ip_length;
  }
  // MF flag or a fragment offset: a piece of a datagram we do not reassemble.
  if ((load_be16(p + ip + 6) & 0x3FFFu) != 0) return ParseError::fragment;
  if (std::to_integer<uint8_t>(p[ip + 9]) != kIpProtoUdp) return ParseError::not_udp;

  const std::size_t udp = ip + ihl;
  if (ip_total < ihl + kUdpHeaderBytes) return ParseError::bad_udp_length;
  if (avail < udp + kUdpHeaderBytes) return missing(udp + kUdpHeaderBytes, wire_bytes);
  const std::size_t udp_len = load_be16(p + udp + 4);
  if (udp_len != ip_total - ihl) return ParseError::bad_udp_length;

  std::memcpy(out.dst_mac.data(), p, 6);
  std::memcpy(out.src_mac.data(), p + 6, 6);
  out.vlan_count = vlans;
  out.vlan_id = vlan_id;
  out.src_ip = load_be32(p + ip + 12);
  out.dst_ip = load_be32(p + ip + 16);
  out.src_port = load_be16(p + udp);
  out.dst_port = load_be16(p + udp + 2);
  out.ip_offset = static_cast<uint16_t>(ip);
  out.udp_offset = static_cast<uint16_t>(udp);
  out.payload_offset = static_cast<uint16_t>(udp + kUdpHeaderBytes);
  out.payload_bytes = static_cast<uint32_t>(udp_len - kUdpHeaderBytes);
  out.frame_bytes = static_cast<uint32_t>(ip + ip_total);
  return ParseError::ok;
}

std::array<uint8_t, 6> multicast_mac(uint32_t group) noexcept {
  return {0x01,
          0x00,
          0x5e,
          static_cast<uint8_t>((group >> 16) & 0x7F),
          static_cast<uint8_t>(group >> 8),
          static_cast<uint8_t>(group)};
}

bool parse_ipv4(std::string_view text, uint32_t& out) noexcept {
  uint32_t value = 0;
  const char* it = text.data();
  const char* end = text.data() + text.size();
  for (int i = 0; i < 4; ++i) {
    unsigned octet = 0;
    auto [next, ec] = std::from_chars(it, end, octet);
    if (ec != std::errc{} || next == it || next - it > 3 || octet > 255) return false;
    if (next - it > 1 && *it == '0') return false;  // no leading zeros (octal ambiguity)
    value = (value << 8) | octet;
    it = next;
    if (i < 3) {
      if (it == end || *it != '.') return false;
      ++it;
    }
  }
  if (it != end) return false;
  out = value;
  return true;
}

std::array<char, 16> format_ipv4(uint32_t addr) noexcept {
  std::array<char, 16> buf{};
  char* it = buf.data();
  for (int shift = 24; shift >= 0; shift -= 8) {
    it = std::to_chars(it, buf.data() + buf.size() - 1, (addr >> shift) & 0xFF).ptr;
    if (shift > 0) *it++ = '.';
  }
  *it = '\0';
  return buf;
}

}  // namespace rocecap::capture::net
