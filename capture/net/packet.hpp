// Ethernet / VLAN / IPv4 / UDP parsing for the capture hot path.
//
// Pure functions of bytes: no allocation, no exceptions, no logging. A frame either parses to
// the offsets of its UDP payload and its addresses, or to one reason from a fixed enum that the
// caller counts. Nothing here trusts a fixed 42-byte offset or the completion's byte count alone.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace rocecap::capture::net {

inline constexpr std::size_t kEthHeaderBytes = 14;
inline constexpr std::size_t kVlanTagBytes = 4;
inline constexpr std::size_t kMaxVlanTags = 2;
inline constexpr std::size_t kIpv4MinHeaderBytes = 20;
inline constexpr std::size_t kUdpHeaderBytes = 8;
inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint16_t kEtherTypeVlan = 0x8100;  // 802.1Q
inline constexpr uint16_t kEtherTypeQinQ = 0x88A8;  // 802.1ad outer tag
inline constexpr uint8_t kIpProtoUdp = 17;
inline constexpr uint8_t kIpProtoIgmp = 2;

// Why a frame was not accepted as one whole, unfragmented IPv4/UDP datagram.
// Stable order: the values index per-reason counter arrays and name metric labels.
enum class ParseError : uint8_t {
  ok = 0,
  truncated,             // frame ends inside the Ethernet, VLAN or fixed IPv4 header (later
                         // cuts show as ip_options_too_long or bad_ip_length)
  too_many_vlans,        // more than kMaxVlanTags tags
  not_ipv4,              // EtherType (after tags) is not IPv4, or IP version != 4
  bad_ip_header,         // IHL < 5 (the header checksum is left to the NIC / kernel)
  ip_options_too_long,   // IHL says more header than the frame holds
  bad_ip_length,         // IPv4 total length < header, or > the bytes on the wire
  fragment,              // MF set or fragment offset != 0: not reassembled, counted
  not_udp,               // IPv4 protocol is not UDP
  bad_udp_length,        // UDP length < 8 or disagrees with the IPv4 payload length
  headers_beyond_split,  // headers extend past the bytes available (header/payload split)
  count_                 // number of reasons; not a reason
};

inline constexpr std::size_t kParseErrorCount = static_cast<std::size_t>(ParseError::count_);

// Metric-label style name ("bad_udp_length"); "ok" for ParseError::ok.
std::string_view to_string(ParseError e) noexcept;

// Addresses and ports in host byte order; offsets from the start of the Ethernet header.
struct UdpFrame {
  std::array<uint8_t, 6> dst_mac{};
  std::array<uint8_t, 6> src_mac{};
  uint8_t vlan_count = 0;
  uint16_t vlan_id = 0;  // outermost tag's VID, 0 without tags
  uint32_t src_ip = 0;
  uint32_t dst_ip = 0;
  uint16_t src_port = 0;
  uint16_t dst_port = 0;
  uint16_t ip_offset = 0;
  uint16_t udp_offset = 0;
  uint16_t payload_offset = 0;
  uint32_t payload_bytes = 0;  // from the UDP length field, validated against the frame
  uint32_t frame_bytes = 0;    // Ethernet frame length without padding past the IP datagram
};

// Parses one Ethernet frame.
//  head:       the first bytes of the frame that are readable (the whole frame, or only the
//              header slot when the NIC split headers from payload);
//  wire_bytes: the length of the whole frame as received (e.g. the completion's byte_len).
// Lengths are checked against wire_bytes; headers must lie inside head, else
// headers_beyond_split (or truncated when the frame itself is too short).
// Trailing bytes after the IP datagram (Ethernet padding) are allowed and excluded.
// `out` is written only when the result is ok.
ParseError parse_udp(std::span<const std::byte> head, std::size_t wire_bytes,
                     UdpFrame& out) noexcept;

inline ParseError parse_udp(std::span<const std::byte> frame, UdpFrame& out) noexcept {
  return parse_udp(frame, frame.size(), out);
}

// Multicast MAC address for an IPv4 group (01:00:5e + low 23 bits of the group).
std::array<uint8_t, 6> multicast_mac(uint32_t group) noexcept;

// Dotted-quad helpers for the edges (config, logs, tools); not for the hot path.
bool parse_ipv4(std::string_view text, uint32_t& out) noexcept;
std::array<char, 16> format_ipv4(uint32_t addr) noexcept;  // NUL-terminated

inline constexpr bool is_multicast(uint32_t addr) noexcept {
  return (addr >> 28) == 0xE;
}

}  // namespace rocecap::capture::net
