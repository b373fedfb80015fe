#include "capture/net/udp_builder.hpp"

#include <cstring>

namespace rocecap::capture::net {
namespace {

constexpr std::size_t kMaxIpOptionWords = 10;

void store_be16(std::byte* p, uint16_t v) noexcept {
  p[0] = static_cast<std::byte>(v >> 8);
  p[1] = static_cast<std::byte>(v);
}

void store_be32(std::byte* p, uint32_t v) noexcept {
  store_be16(p, static_cast<uint16_t>(v >> 16));
  store_be16(p + 2, static_cast<uint16_t>(v));
}

std::size_t write_ipv4(const UdpFrameSpec& spec, std::size_t payload_bytes,
                       std::byte* ip) noexcept {
  const std::size_t ihl = kIpv4MinHeaderBytes + std::size_t{spec.ip_option_words} * 4;
  const std::size_t total = ihl + kUdpHeaderBytes + payload_bytes;
  std::memset(ip, 0, ihl);
  ip[0] = static_cast<std::byte>(0x40 | (ihl / 4));
  store_be16(ip + 2, static_cast<uint16_t>(total));
  store_be16(ip + 4, spec.ip_id);
  store_be16(ip + 6, 0x4000);  // DF: our datagrams are never fragments
  ip[8] = static_cast<std::byte>(spec.ttl);
  ip[9] = static_cast<std::byte>(kIpProtoUdp);
  store_be32(ip + 12, spec.src_ip);
  store_be32(ip + 16, spec.dst_ip);
  std::memset(ip + kIpv4MinHeaderBytes, 0x01, ihl - kIpv4MinHeaderBytes);  // NOP options
  store_be16(ip + 10, internet_checksum({ip, ihl}));
  return ihl;
}

}  // namespace

std::size_t udp_header_bytes(const UdpFrameSpec& spec) noexcept {
  return kEthHeaderBytes + std::size_t{spec.vlan_count} * kVlanTagBytes + kIpv4MinHeaderBytes +
         std::size_t{spec.ip_option_words} * 4 + kUdpHeaderBytes;
}

std::size_t write_udp_headers(const UdpFrameSpec& spec, std::size_t payload_bytes,
                              std::span<std::byte> out) noexcept {
  const std::size_t header_bytes = udp_header_bytes(spec);
  const std::size_t ip_bytes = kIpv4MinHeaderBytes + std::size_t{spec.ip_option_words} * 4;
  if (spec.vlan_count > kMaxVlanTags || spec.ip_option_words > kMaxIpOptionWords ||
      out.size() < header_bytes || ip_bytes + kUdpHeaderBytes + payload_bytes > 0xFFFF) {
    return 0;
  }
  std::byte* p = out.data();
  std::memcpy(p, spec.dst_mac.data(), 6);
  std::memcpy(p + 6, spec.src_mac.data(), 6);
  std::size_t off = 12;
  for (std::size_t i = 0; i < spec.vlan_count; ++i) {
    store_be16(p + off, spec.vlans[i].tpid);
    store_be16(p + off + 2, spec.vlans[i].tci);
    off += kVlanTagBytes;
  }
  store_be16(p + off, kEtherTypeIpv4);
  off += 2;
  off += write_ipv4(spec, payload_bytes, p + off);
  store_be16(p + off, spec.src_port);
  store_be16(p + off + 2, spec.dst_port);
  store_be16(p + off + 4, static_cast<uint16_t>(kUdpHeaderBytes + payload_bytes));
  store_be16(p + off + 6, 0);
  return header_bytes;
}

uint16_t internet_checksum(std::span<const std::byte> bytes) noexcept {
  uint32_t sum = 0;
  std::size_t i = 0;
  for (; i + 1 < bytes.size(); i += 2) {
    sum += (std::to_integer<uint32_t>(bytes[i]) << 8) | std::to_integer<uint32_t>(bytes[i + 1]);
  }
  if (i < bytes.size()) sum += std::to_integer<uint32_t>(bytes[i]) << 8;
  while ((sum >> 16) != 0)
    sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

}  // namespace rocecap::capture::net
