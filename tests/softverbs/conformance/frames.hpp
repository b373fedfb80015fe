// Ethernet/IPv4/UDP frames for the conformance suite, sent through a raw AF_PACKET socket on
// the interface that feeds the device under test.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>
#include <vector>

namespace conf {

struct Stream {
  uint32_t src_ip;  // host order
  uint32_t group;   // host order, 239.x.y.z (a unicast stream: 198.51.100.x)
  uint16_t sport;
  uint16_t dport;
  bool unicast = false;
  uint8_t dst_mac[6]{};  // unicast streams: the device port's own MAC
};

// A distinct stream per case and index, so frames of one case never match another's rules.
Stream stream(int case_id, int index = 0);
// The same to a unicast address and the MAC of the netdev `ifname` (the device's own port, so
// that any device's receive path passes it on to the flow tables).
Stream unicast_stream(int case_id, const std::string& ifname);

enum class Corrupt { none, udp_csum, ip_csum };

// Frame: Ethernet (dst 01:00:5e + low 23 bits of the group, or a unicast stream's MAC) + IPv4 +
// UDP + payload. The payload
// starts with a 4-byte big-endian sequence number; the rest is a pattern derived from it.
std::vector<uint8_t> udp_frame(const Stream& s, uint32_t seq, size_t payload,
                               Corrupt c = Corrupt::none);
uint8_t pattern_byte(uint32_t seq, size_t i);

// Full-mask ETH + IPV4 + UDP rule for the stream.
struct FlowRule {
  ibv_flow_attr attr;
  ibv_flow_spec_eth eth;
  ibv_flow_spec_ipv4 ip;
  ibv_flow_spec_tcp_udp udp;
};
FlowRule flow_rule(const Stream& s, uint16_t priority = 0, uint32_t flags = 0);
// Rule on the destination group only (overlaps the full rule).
struct GroupRule {
  ibv_flow_attr attr;
  ibv_flow_spec_ipv4 ip;
};
GroupRule group_rule(const Stream& s, uint16_t priority = 0);

class Sender {
 public:
  explicit Sender(const std::string& ifname);
  ~Sender();
  Sender(const Sender&) = delete;
  Sender& operator=(const Sender&) = delete;
  void send(const std::vector<uint8_t>& frame);

 private:
  int fd_ = -1;
};

}  // namespace conf
