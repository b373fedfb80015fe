#include "frames.hpp"

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "harness.hpp"

namespace conf {
namespace {

void put16(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
void put32(uint8_t* p, uint32_t v) {
  put16(p, v >> 16);
  put16(p + 2, v & 0xffff);
}

uint32_t sum16(const uint8_t* p, size_t n, uint32_t acc) {
  for (size_t i = 0; i + 1 < n; i += 2)
    acc += static_cast<uint32_t>(p[i] << 8 | p[i + 1]);
  if (n & 1) acc += static_cast<uint32_t>(p[n - 1] << 8);
  return acc;
}

uint16_t finish(uint32_t s) {
  while (s >> 16)
    s = (s & 0xffff) + (s >> 16);
  return static_cast<uint16_t>(~s);
}

void group_mac(uint32_t group, uint8_t* mac) {
  const uint8_t m[6] = {0x01,
                        0x00,
                        0x5e,
                        static_cast<uint8_t>((group >> 16) & 0x7f),
                        static_cast<uint8_t>(group >> 8),
                        static_cast<uint8_t>(group)};
  memcpy(mac, m, 6);
}

void dst_mac(const Stream& s, uint8_t* mac) {
  if (s.unicast)
    memcpy(mac, s.dst_mac, 6);
  else
    group_mac(s.group, mac);
}

}  // namespace

Stream unicast_stream(int case_id, const std::string& ifname) {
  Stream s = stream(case_id);
  s.group = 0xc6336400u | static_cast<uint32_t>(case_id);  // 198.51.100.<case>
  s.unicast = true;
  ifreq ifr{};
  strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  const bool ok = fd >= 0 && ioctl(fd, SIOCGIFHWADDR, &ifr) == 0;
  const int err = errno;
  if (fd >= 0) close(fd);
  CONF_CHECK(ok, "MAC of " + ifname + ": " + strerror(err));
  memcpy(s.dst_mac, ifr.ifr_hwaddr.sa_data, 6);
  return s;
}

Stream stream(int case_id, int index) {
  Stream s;
  s.src_ip = 0xc0000200u | static_cast<uint32_t>(1 + index);  // 192.0.2.(1+index)
  s.group = 0xef530000u | static_cast<uint32_t>(case_id << 8) | static_cast<uint32_t>(1 + index);
  s.sport = static_cast<uint16_t>(40000 + index);
  s.dport = static_cast<uint16_t>(20000 + case_id * 16 + index);
  return s;
}

uint8_t pattern_byte(uint32_t seq, size_t i) {
  return static_cast<uint8_t>(seq * 31 + i * 7 + 3);
}

std::vector<uint8_t> udp_frame(const Stream& s, uint32_t seq, size_t payload, Corrupt c) {
  std::vector<uint8_t> f(14 + 20 + 8 + payload);
  dst_mac(s, f.data());
  const uint8_t src[6] = {0x02, 0x00, 0x00, 0x53, 0x56, 0x01};
  memcpy(f.data() + 6, src, 6);
  put16(f.data() + 12, 0x0800);
  uint8_t* ip = f.data() + 14;
  ip[0] = 0x45;
  put16(ip + 2, static_cast<uint32_t>(20 + 8 + payload));
  put16(ip + 4, seq & 0xffff);
  ip[6] = 0x40;
  ip[8] = 16;
  ip[9] = 17;
  put32(ip + 12, s.src_ip);
  put32(ip + 16, s.group);
  uint8_t* udp = ip + 20;
  put16(udp, s.sport);
  put16(udp + 2, s.dport);
  put16(udp + 4, static_cast<uint32_t>(8 + payload));
  uint8_t* pl = udp + 8;
  for (size_t i = 0; i < payload; ++i)
    pl[i] = pattern_byte(seq, i);
  if (payload >= 4) put32(pl, seq);
  put16(ip + 10, finish(sum16(ip, 20, 0)));
  uint32_t acc = sum16(ip + 12, 8, 0) + 17 + static_cast<uint32_t>(8 + payload);
  uint16_t cs = finish(sum16(udp, 8 + payload, acc));
  put16(udp + 6, cs == 0 ? 0xffff : cs);
  if (c == Corrupt::udp_csum) udp[7] ^= 0x5a;
  if (c == Corrupt::ip_csum) ip[11] ^= 0x5a;
  return f;
}

FlowRule flow_rule(const Stream& s, uint16_t priority, uint32_t flags) {
  static_assert(sizeof(FlowRule) == sizeof(ibv_flow_attr) + sizeof(ibv_flow_spec_eth) +
                                        sizeof(ibv_flow_spec_ipv4) + sizeof(ibv_flow_spec_tcp_udp));
  FlowRule r{};
  r.attr.type = IBV_FLOW_ATTR_NORMAL;
  r.attr.size = sizeof r;
  r.attr.priority = priority;
  r.attr.num_of_specs = 3;
  r.attr.port = 1;
  r.attr.flags = flags;
  r.eth.type = IBV_FLOW_SPEC_ETH;
  r.eth.size = sizeof r.eth;
  dst_mac(s, r.eth.val.dst_mac);
  memset(r.eth.mask.dst_mac, 0xff, 6);
  r.ip.type = IBV_FLOW_SPEC_IPV4;
  r.ip.size = sizeof r.ip;
  r.ip.val.src_ip = htonl(s.src_ip);
  r.ip.val.dst_ip = htonl(s.group);
  r.ip.mask.src_ip = 0xffffffff;
  r.ip.mask.dst_ip = 0xffffffff;
  r.udp.type = IBV_FLOW_SPEC_UDP;
  r.udp.size = sizeof r.udp;
  r.udp.val.dst_port = htons(s.dport);
  r.udp.mask.dst_port = 0xffff;
  return r;
}

GroupRule group_rule(const Stream& s, uint16_t priority) {
  static_assert(sizeof(GroupRule) == sizeof(ibv_flow_attr) + sizeof(ibv_flow_spec_ipv4));
  GroupRule r{};
  r.attr.type = IBV_FLOW_ATTR_NORMAL;
  r.attr.size = sizeof r;
  r.attr.priority = priority;
  r.attr.num_of_specs = 1;
  r.attr.port = 1;
  r.ip.type = IBV_FLOW_SPEC_IPV4;
  r.ip.size = sizeof r.ip;
  r.ip.val.dst_ip = htonl(s.group);
  r.ip.mask.dst_ip = 0xffffffff;
  return r;
}

Sender::Sender(const std::string& ifname) {
  fd_ = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
  CONF_CHECK(fd_ >= 0, std::string("raw socket: ") + strerror(errno));
  sockaddr_ll sll{};
  sll.sll_family = AF_PACKET;
  sll.sll_ifindex = static_cast<int>(if_nametoindex(ifname.c_str()));
  CONF_CHECK(sll.sll_ifindex != 0, "no interface " + ifname);
  CONF_CHECK(bind(fd_, reinterpret_cast<sockaddr*>(&sll), sizeof sll) == 0,
             std::string("bind ") + ifname + ": " + strerror(errno));
}

Sender::~Sender() {
  if (fd_ >= 0) close(fd_);
}

void Sender::send(const std::vector<uint8_t>& frame) {
  const ssize_t n = ::send(fd_, frame.data(), frame.size(), 0);
  CONF_CHECK(n == static_cast<ssize_t>(frame.size()), std::string("send: ") + strerror(errno));
}

}  // namespace conf
