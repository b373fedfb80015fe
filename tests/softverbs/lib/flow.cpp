// Flow steering: ibv_flow_attr specs become a byte mask over a parsed header Key. Lower
// priority numbers win, except that trapping multicast rules all share the last table (their
// priority is ignored, as on mlx5); identical rules replicate to every QP; overlapping
// different rules in one table deliver to one QP; DONT_TRAP lets matching continue; SNIFFER
// sees RX and TX.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "sv.hpp"

namespace sv {
namespace {

void set_bytes(void* val, void* mask, const void* v, const void* m, size_t n) {
  auto* dv = static_cast<uint8_t*>(val);
  auto* dm = static_cast<uint8_t*>(mask);
  const auto* sv = static_cast<const uint8_t*>(v);
  const auto* sm = static_cast<const uint8_t*>(m);
  for (size_t i = 0; i < n; ++i) {
    dm[i] |= sm[i];
    dv[i] = static_cast<uint8_t>((dv[i] & ~sm[i]) | (sv[i] & sm[i]));
  }
}

void require(uint8_t& val, uint8_t& mask, uint8_t v) {
  val = v;
  mask = 0xff;
}

// Specs follow each other at 4-byte granularity, so they are copied out, never cast in place.
template <class Spec>
bool load(const uint8_t* p, uint16_t size, Spec& out) {
  if (size != sizeof(Spec)) return false;
  memcpy(&out, p, sizeof out);
  return true;
}

int add_spec(Match& m, const uint8_t* p, ibv_flow_spec_type type, uint16_t size) {
  Key& v = m.val;
  Key& k = m.mask;
  switch (type) {
    case IBV_FLOW_SPEC_ETH: {
      ibv_flow_spec_eth e;
      if (!load(p, size, e)) return EINVAL;
      set_bytes(v.dmac, k.dmac, e.val.dst_mac, e.mask.dst_mac, 6);
      set_bytes(v.smac, k.smac, e.val.src_mac, e.mask.src_mac, 6);
      set_bytes(&v.ether_type, &k.ether_type, &e.val.ether_type, &e.mask.ether_type, 2);
      set_bytes(&v.vlan_tag, &k.vlan_tag, &e.val.vlan_tag, &e.mask.vlan_tag, 2);
      return 0;
    }
    case IBV_FLOW_SPEC_IPV4: {
      ibv_flow_spec_ipv4 ip;
      if (!load(p, size, ip)) return EINVAL;
      set_bytes(&v.src_ip, &k.src_ip, &ip.val.src_ip, &ip.mask.src_ip, 4);
      set_bytes(&v.dst_ip, &k.dst_ip, &ip.val.dst_ip, &ip.mask.dst_ip, 4);
      require(v.is_ipv4, k.is_ipv4, 1);
      return 0;
    }
    case IBV_FLOW_SPEC_IPV4_EXT: {
      ibv_flow_spec_ipv4_ext ip;
      if (!load(p, size, ip)) return EINVAL;
      set_bytes(&v.src_ip, &k.src_ip, &ip.val.src_ip, &ip.mask.src_ip, 4);
      set_bytes(&v.dst_ip, &k.dst_ip, &ip.val.dst_ip, &ip.mask.dst_ip, 4);
      set_bytes(&v.proto, &k.proto, &ip.val.proto, &ip.mask.proto, 1);
      set_bytes(&v.tos, &k.tos, &ip.val.tos, &ip.mask.tos, 1);
      set_bytes(&v.ttl, &k.ttl, &ip.val.ttl, &ip.mask.ttl, 1);
      set_bytes(&v.ip_flags, &k.ip_flags, &ip.val.flags, &ip.mask.flags, 1);
      require(v.is_ipv4, k.is_ipv4, 1);
      return 0;
    }
    case IBV_FLOW_SPEC_UDP:
    case IBV_FLOW_SPEC_TCP: {
      ibv_flow_spec_tcp_udp t;
      if (!load(p, size, t)) return EINVAL;
      set_bytes(&v.dst_port, &k.dst_port, &t.val.dst_port, &t.mask.dst_port, 2);
      set_bytes(&v.src_port, &k.src_port, &t.val.src_port, &t.mask.src_port, 2);
      require(v.l4, k.l4, type == IBV_FLOW_SPEC_UDP ? IPPROTO_UDP : IPPROTO_TCP);
      return 0;
    }
    default:
      return EOPNOTSUPP;
  }
}

int parse_attr(const ibv_flow_attr& a, Match& m) {
  const auto* p = reinterpret_cast<const uint8_t*>(&a + 1);
  const uint8_t* end = reinterpret_cast<const uint8_t*>(&a) + a.size;
  for (int i = 0; i < a.num_of_specs; ++i) {
    ibv_flow_spec_type type;
    uint16_t size = 0;
    if (p + sizeof type + sizeof size > end) return EINVAL;
    memcpy(&type, p, sizeof type);
    memcpy(&size, p + sizeof type, sizeof size);
    if (size == 0 || p + size > end) return EINVAL;
    if (int rc = add_spec(m, p, type, size)) return rc;
    p += size;
  }
  return 0;
}

bool attr_ok(const ibv_flow_attr& a) {
  if (a.comp_mask || a.port != 1 || a.size < sizeof a) return false;
  if (a.flags & ~static_cast<uint32_t>(IBV_FLOW_ATTR_FLAGS_DONT_TRAP)) return false;
  switch (a.type) {
    case IBV_FLOW_ATTR_NORMAL:
      return true;
    case IBV_FLOW_ATTR_ALL_DEFAULT:
    case IBV_FLOW_ATTR_MC_DEFAULT:
    case IBV_FLOW_ATTR_SNIFFER:
      return a.num_of_specs == 0;
    default:
      return false;
  }
}

// kernel drivers/infiniband/hw/mlx5/fs.c flow_is_multicast_only: a NORMAL rule whose FIRST spec
// is IPv4 with a multicast destination, or Ethernet with a multicast destination MAC in both
// value and mask.
bool multicast_only(const ibv_flow_attr& a) {
  if (a.type != IBV_FLOW_ATTR_NORMAL || a.num_of_specs < 1 ||
      a.size < sizeof a + sizeof(ibv_flow_spec_type) + sizeof(uint16_t))
    return false;
  const auto* p = reinterpret_cast<const uint8_t*>(&a + 1);
  ibv_flow_spec_type type;
  uint16_t size = 0;
  memcpy(&type, p, sizeof type);
  memcpy(&size, p + sizeof type, sizeof size);
  if (type == IBV_FLOW_SPEC_IPV4 && size == sizeof(ibv_flow_spec_ipv4)) {
    ibv_flow_spec_ipv4 ip;
    memcpy(&ip, p, sizeof ip);
    return (ntohl(ip.val.dst_ip) >> 28) == 0xe;  // 224.0.0.0/4
  }
  if (type == IBV_FLOW_SPEC_ETH && size == sizeof(ibv_flow_spec_eth)) {
    ibv_flow_spec_eth e;
    memcpy(&e, p, sizeof e);
    return (e.val.dst_mac[0] & 1) && (e.mask.dst_mac[0] & 1);
  }
  return false;
}

// The flow table a rule lands in, as fs.c get_flow_table chooses it: a trapping multicast-only
// rule goes to the one multicast table (MLX5_IB_FLOW_MCAST_PRIO, after every other bypass
// priority) whatever priority it asked for; the others to ib_prio_to_core_prio (2 * priority,
// plus 1 unless DONT_TRAP). Tables are searched in that order; within one table identical
// matches share an entry (every QP gets the frame) and different ones match first come.
constexpr uint32_t kMcastCorePriority = 1u << 20;  // beyond 2 * 65535 + 1
uint32_t core_priority(const ibv_flow_attr& a) {
  const bool dont_trap = a.flags & IBV_FLOW_ATTR_FLAGS_DONT_TRAP;
  if (multicast_only(a) && !dont_trap) return kMcastCorePriority;
  return 2u * a.priority + (dont_trap ? 0u : 1u);
}

bool before(const Rule* a, const Rule* b) {
  return a->priority != b->priority ? a->priority < b->priority : a->seq < b->seq;
}

}  // namespace

bool key_matches(const Match& m, const Key& k) {
  const auto* kv = reinterpret_cast<const uint8_t*>(&k);
  const auto* mv = reinterpret_cast<const uint8_t*>(&m.val);
  const auto* mm = reinterpret_cast<const uint8_t*>(&m.mask);
  for (size_t i = 0; i < sizeof(Key); ++i)
    if ((kv[i] & mm[i]) != mv[i]) return false;
  return true;
}

bool same_match(const Match& a, const Match& b) {
  return memcmp(&a, &b, sizeof a) == 0;
}

bool parse_key(const uint8_t* f, size_t len, Key& k) {
  memset(&k, 0, sizeof k);
  if (len < 14) return false;
  memcpy(k.dmac, f, 6);
  memcpy(k.smac, f + 6, 6);
  size_t off = 12;
  if (len >= 18 && f[12] == 0x81 && f[13] == 0x00) {
    memcpy(&k.vlan_tag, f + 14, 2);
    off = 16;
  }
  memcpy(&k.ether_type, f + off, 2);
  off += 2;
  if (f[off - 2] != 0x08 || f[off - 1] != 0x00 || len < off + 20 || (f[off] >> 4) != 4) return true;
  const size_t ihl = static_cast<size_t>(f[off] & 0x0f) * 4;
  if (ihl < 20 || len < off + ihl) return true;
  k.is_ipv4 = 1;
  k.tos = f[off + 1];
  k.ip_flags = static_cast<uint8_t>(f[off + 6] >> 5);
  k.ttl = f[off + 8];
  k.proto = f[off + 9];
  memcpy(&k.src_ip, f + off + 12, 4);
  memcpy(&k.dst_ip, f + off + 16, 4);
  const bool first_fragment = ((f[off + 6] & 0x1f) | f[off + 7]) == 0;
  if ((k.proto == IPPROTO_UDP || k.proto == IPPROTO_TCP) && first_fragment &&
      len >= off + ihl + 4) {
    memcpy(&k.src_port, f + off + ihl, 2);
    memcpy(&k.dst_port, f + off + ihl + 2, 2);
    k.l4 = k.proto;
  }
  return true;
}

// Under mu.
void Device::steer(const Frame& f) {
  Key k;
  if (!parse_key(f.data, f.len, k)) return;
  for (Rule* r : rules)
    if (r->type == IBV_FLOW_ATTR_SNIFFER) deliver(*r->qp, f, false);
  if (f.outgoing) return;
  bool trapped = false;
  for (size_t i = 0; i < rules.size() && !trapped;) {
    size_t j = i;
    const Rule* first = nullptr;
    for (; j < rules.size() && rules[j]->priority == rules[i]->priority; ++j)
      if (!first && rules[j]->type == IBV_FLOW_ATTR_NORMAL && key_matches(rules[j]->match, k))
        first = rules[j];
    for (size_t n = i; first && n < j; ++n) {
      Rule* r = rules[n];
      if (r->type != IBV_FLOW_ATTR_NORMAL || !same_match(r->match, first->match)) continue;
      deliver(*r->qp, f, false);
      if (!(r->flags & IBV_FLOW_ATTR_FLAGS_DONT_TRAP)) trapped = true;
    }
    i = j;
  }
  if (trapped) return;
  const bool multicast = k.dmac[0] & 1;
  bool mc_taken = false;
  for (Rule* r : rules)
    if (multicast && r->type == IBV_FLOW_ATTR_MC_DEFAULT) {
      deliver(*r->qp, f, false);
      mc_taken = true;
    }
  if (mc_taken) return;
  for (Rule* r : rules)
    if (r->type == IBV_FLOW_ATTR_ALL_DEFAULT) deliver(*r->qp, f, false);
}

ibv_flow* create_flow(ibv_qp* qp, ibv_flow_attr* a) {
  if (!has_cap_net_raw()) {
    errno = EPERM;
    return nullptr;
  }
  if (!attr_ok(*a)) {
    errno = EINVAL;
    return nullptr;
  }
  auto* r = new Rule;
  r->box.self = r;
  if (int rc = parse_attr(*a, r->match)) {
    delete r;
    errno = rc;
    return nullptr;
  }
  Qp* q = qp_of(qp);
  // A trapping rule takes its frames from the kernel stack (modelled only when asked for).
  const bool traps = a->type == IBV_FLOW_ATTR_NORMAL && !(a->flags & IBV_FLOW_ATTR_FLAGS_DONT_TRAP);
  if (traps && kernel_trap_enabled()) {
    r->trap = KernelTrap::install(*q->ctx->dev, r->match);
    if (!r->trap) {
      const int e = errno;
      delete r;
      errno = e;
      return nullptr;
    }
  }
  r->qp = q;
  r->type = a->type;
  r->priority = core_priority(*a);
  r->flags = a->flags;
  r->box.flow.context = qp->context;
  r->box.flow.handle = allocate_key() >> 8;
  Device& dev = *q->ctx->dev;
  std::lock_guard<std::mutex> g(dev.mu);
  r->seq = dev.next_seq++;
  dev.rules.insert(std::upper_bound(dev.rules.begin(), dev.rules.end(), r, before), r);
  ++q->flows;
  if (trace_enabled()) {
    std::lock_guard<Spin> ql(q->lock);
    fprintf(stderr, "softverbs: %s: ibv_create_flow: qp %u %s, %llu receive WRs posted\n",
            dev.cfg.name.c_str(), q->box.qp.qp_num,
            q->state == IBV_QPS_RTR || q->state == IBV_QPS_RTS ? "receiving" : "not receiving",
            static_cast<unsigned long long>(q->rq_tail - q->rq_head));
  }
  return &r->box.flow;
}

int destroy_flow(ibv_flow* flow) {
  Rule* r = reinterpret_cast<FlowBox*>(flow)->self;
  Device& dev = *r->qp->ctx->dev;
  {
    std::lock_guard<std::mutex> g(dev.mu);
    std::erase(dev.rules, r);
    --r->qp->flows;
  }
  delete r;  // outside mu: its KernelTrap runs nft
  return 0;
}

}  // namespace sv
