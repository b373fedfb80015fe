// The steering rule of one stream's QP. One rule, all fields full-mask: overlapping rules of
// different QPs would deliver a frame to only one of them (doc/verbs.md), so each stream gets its
// exact (multicast MAC, group, antenna, UDP port).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

#include "capture/classifier.hpp"

namespace rocecap::capture::verbs {

struct FlowRule {
  ibv_flow_attr attr;
  ibv_flow_spec_eth eth;
  ibv_flow_spec_ipv4 ip;
  ibv_flow_spec_tcp_udp udp;
};

// The rule for `key` on `port`, ready for ibv_create_flow(qp, &rule.attr).
FlowRule flow_rule(const StreamKey& key, uint8_t port);

}  // namespace rocecap::capture::verbs
