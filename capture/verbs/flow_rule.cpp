#include "capture/verbs/flow_rule.hpp"

#include <arpa/inet.h>

#include <cstring>

#include "capture/net/packet.hpp"

namespace rocecap::capture::verbs {

FlowRule flow_rule(const StreamKey& key, uint8_t port) {
  FlowRule r{};
  r.attr.type = IBV_FLOW_ATTR_NORMAL;
  r.attr.size = sizeof r;
  r.attr.num_of_specs = 3;
  r.attr.port = port;
  r.eth.type = IBV_FLOW_SPEC_ETH;
  r.eth.size = sizeof r.eth;
  const auto mac = net::multicast_mac(key.group);
  std::memcpy(r.eth.val.dst_mac, mac.data(), 6);
  std::memset(r.eth.mask.dst_mac, 0xff, 6);
  r.ip.type = IBV_FLOW_SPEC_IPV4;
  r.ip.size = sizeof r.ip;
  r.ip.val.src_ip = htonl(key.source);
  r.ip.val.dst_ip = htonl(key.group);
  r.ip.mask.src_ip = r.ip.mask.dst_ip = 0xffffffff;
  r.udp.type = IBV_FLOW_SPEC_UDP;
  r.udp.size = sizeof r.udp;
  r.udp.val.dst_port = htons(key.port);
  r.udp.mask.dst_port = 0xffff;
  return r;
}

}  // namespace rocecap::capture::verbs
