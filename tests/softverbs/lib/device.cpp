// Device list, contexts, device and port queries, async events.
#include <fcntl.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "sv.hpp"

#undef ibv_query_port

namespace sv {
namespace {

void fill_netdev(Device& d) {
  if (d.cfg.wire) {
    const uint8_t mac[6] = {0x02, 0x53, 0x56, 0x00, 0x00, 0x01};
    memcpy(d.mac, mac, 6);
    return;
  }
  d.ifindex = static_cast<int>(if_nametoindex(d.cfg.netdev.c_str()));
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return;
  ifreq ifr{};
  snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", d.cfg.netdev.c_str());
  if (ioctl(s, SIOCGIFHWADDR, &ifr) == 0) memcpy(d.mac, ifr.ifr_hwaddr.sa_data, 6);
  close(s);
}

Device* make_device(const DeviceConfig& c) {
  auto* d = new Device;
  d->cfg = c;
  d->ibdev.node_type = IBV_NODE_CA;
  d->ibdev.transport_type = IBV_TRANSPORT_IB;
  snprintf(d->ibdev.name, sizeof d->ibdev.name, "%s", c.name.c_str());
  snprintf(d->ibdev.dev_name, sizeof d->ibdev.dev_name, "uverbs-%s", c.name.c_str());
  snprintf(d->ibdev.dev_path, sizeof d->ibdev.dev_path, "/sys/class/infiniband_verbs/uverbs-%s",
           c.name.c_str());
  snprintf(d->ibdev.ibdev_path, sizeof d->ibdev.ibdev_path, "/sys/class/infiniband/%s",
           c.name.c_str());
  fill_netdev(*d);
  init_sysfs(*d);
  return d;
}

uint64_t guid_of(const Device& d) {
  // EUI-64 from the MAC, as mlx5 derives node GUIDs.
  const uint8_t* m = d.mac;
  uint8_t g[8] = {static_cast<uint8_t>(m[0] ^ 2), m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]};
  uint64_t v = 0;
  memcpy(&v, g, 8);
  return v;  // already in network order
}

int netdev_mtu(const Device& d) {
  if (d.cfg.wire) return 9000;
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return 1500;
  ifreq ifr{};
  snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", d.cfg.netdev.c_str());
  int mtu = ioctl(s, SIOCGIFMTU, &ifr) == 0 ? ifr.ifr_mtu : 1500;
  close(s);
  return mtu;
}

bool netdev_up(const Device& d) {
  if (d.cfg.wire) return true;
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return false;
  ifreq ifr{};
  snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", d.cfg.netdev.c_str());
  bool up = ioctl(s, SIOCGIFFLAGS, &ifr) == 0 && (ifr.ifr_flags & IFF_RUNNING);
  close(s);
  return up;
}

ibv_mtu to_ibv_mtu(int mtu) {
  if (mtu >= 4096) return IBV_MTU_4096;
  if (mtu >= 2048) return IBV_MTU_2048;
  if (mtu >= 1024) return IBV_MTU_1024;
  if (mtu >= 512) return IBV_MTU_512;
  return IBV_MTU_256;
}

void fill_device_attr(const Device& d, ibv_device_attr& a) {
  memset(&a, 0, sizeof a);
  snprintf(a.fw_ver, sizeof a.fw_ver, "16.35.0000 softverbs");
  a.node_guid = guid_of(d);
  a.sys_image_guid = a.node_guid;
  a.max_mr_size = ~0ULL;
  a.page_size_cap = 0xfffffffffffff000ULL;
  a.vendor_id = 0x02c9;
  a.vendor_part_id = 4119;
  a.hw_ver = 0;
  a.max_qp = 262144;
  a.max_qp_wr = kMaxQpWr;
  a.device_cap_flags = IBV_DEVICE_RAW_IP_CSUM | IBV_DEVICE_MANAGED_FLOW_STEERING |
                       IBV_DEVICE_PORT_ACTIVE_EVENT | IBV_DEVICE_RC_RNR_NAK_GEN;
  a.max_sge = kMaxSge;
  a.max_sge_rd = kMaxSge;
  a.max_cq = 16777216;
  a.max_cqe = max_cqe();
  a.max_mr = 16777216;
  a.max_pd = 16777216;
  a.max_qp_rd_atom = 16;
  a.max_res_rd_atom = 4194304;
  a.max_qp_init_rd_atom = 16;
  a.atomic_cap = IBV_ATOMIC_HCA;
  a.max_mcast_grp = 2097152;
  a.max_mcast_qp_attach = 240;
  a.max_total_mcast_qp_attach = 503316480;
  a.max_pkeys = 128;
  a.local_ca_ack_delay = 16;
  a.phys_port_cnt = 1;
}

}  // namespace

std::vector<Device*>& devices() {
  static std::vector<Device*>* devs = [] {
    auto* v = new std::vector<Device*>;  // lives for the process, like the real device list
    for (const auto& c : configured_devices())
      v->push_back(make_device(c));
    return v;
  }();
  return *devs;
}

Device* device_of(ibv_device* d) {
  for (Device* dev : devices())
    if (&dev->ibdev == d) return dev;
  return nullptr;
}

Context* ctx_of(ibv_context* c) {
  auto* box =
      reinterpret_cast<CtxBox*>(reinterpret_cast<uint8_t*>(c) - offsetof(verbs_context, context));
  return box->self;
}

void Context::post_async(ibv_event_type type, void* obj) {
  async.push(EventRecord{static_cast<int>(type), obj});
}

int query_device_ex(ibv_context* ctx, const ibv_query_device_ex_input* in, ibv_device_attr_ex* attr,
                    size_t size) {
  if (in && in->comp_mask) return EINVAL;
  if (size < sizeof(ibv_device_attr)) return EINVAL;
  ibv_device_attr_ex a{};
  fill_device_attr(*ctx_of(ctx)->dev, a.orig_attr);
  const bool clock = clock_mode() != ClockMode::none;
  a.completion_timestamp_mask = clock ? kTimestampMask : 0;
  a.hca_core_clock = clock ? kHcaClockKhz : 0;
  a.device_cap_flags_ex = a.orig_attr.device_cap_flags;
  a.raw_packet_caps = IBV_RAW_PACKET_CAP_IP_CSUM;
  a.phys_port_cnt_ex = 1;
  memcpy(attr, &a, size < sizeof a ? size : sizeof a);
  return 0;
}

int query_port(ibv_context* ctx, uint8_t port, ibv_port_attr* attr, size_t size) {
  if (port != 1) return EINVAL;
  const Device& d = *ctx_of(ctx)->dev;
  ibv_port_attr a{};
  a.state = netdev_up(d) ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
  a.max_mtu = IBV_MTU_4096;
  a.active_mtu = to_ibv_mtu(netdev_mtu(d));
  a.gid_tbl_len = 256;
  a.port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;
  a.max_msg_sz = 1U << 30;
  a.pkey_tbl_len = 1;
  a.active_width = 2;   // 4x
  a.active_speed = 32;  // EDR
  a.phys_state = a.state == IBV_PORT_ACTIVE ? 5 : 3;
  a.link_layer = IBV_LINK_LAYER_ETHERNET;
  memcpy(attr, &a, size < sizeof a ? size : sizeof a);
  return 0;
}

int query_rt_values(ibv_context*, ibv_values_ex* values) {
  if (values->comp_mask & ~static_cast<uint32_t>(IBV_VALUES_MASK_RAW_CLOCK)) return EINVAL;
  if (values->comp_mask & IBV_VALUES_MASK_RAW_CLOCK) {
    if (clock_mode() == ClockMode::none) return EOPNOTSUPP;
    // mlx5 returns the cycle count in tv_nsec.
    values->raw_clock.tv_sec = 0;
    values->raw_clock.tv_nsec = static_cast<long>(ns_to_ticks(realtime_ns()));
  }
  return 0;
}

namespace {

void install_ops(Context& c) {
  ibv_context& ic = c.box.vctx.context;
  ic.ops.poll_cq = poll_cq;
  ic.ops.req_notify_cq = req_notify_cq;
  ic.ops.post_recv = post_recv;
  ic.ops.post_send = post_send;
  verbs_context& v = c.box.vctx;
  v.query_port = query_port;
  v.query_device_ex = query_device_ex;
  v.query_rt_values = query_rt_values;
  v.create_cq_ex = create_cq_ex;
  v.ibv_create_flow = create_flow;
  v.ibv_destroy_flow = destroy_flow;
  v.create_qp_ex = create_qp_ex;
  v.sz = sizeof(verbs_context);
}

}  // namespace
}  // namespace sv

using namespace sv;

extern "C" {

ibv_device** ibv_get_device_list(int* num) {
  auto& devs = devices();
  if (num) *num = 0;
  if (devs.empty()) {
    errno = ENOSYS;
    return nullptr;
  }
  auto** list = static_cast<ibv_device**>(calloc(devs.size() + 1, sizeof(ibv_device*)));
  if (!list) {
    errno = ENOMEM;
    return nullptr;
  }
  for (size_t i = 0; i < devs.size(); ++i)
    list[i] = &devs[i]->ibdev;
  if (num) *num = static_cast<int>(devs.size());
  return list;
}

void ibv_free_device_list(ibv_device** list) {
  free(list);
}

const char* ibv_get_device_name(ibv_device* d) {
  return d->name;
}

__be64 ibv_get_device_guid(ibv_device* d) {
  Device* dev = device_of(d);
  return dev ? guid_of(*dev) : 0;
}

int ibv_get_device_index(ibv_device* d) {
  auto& devs = devices();
  for (size_t i = 0; i < devs.size(); ++i)
    if (&devs[i]->ibdev == d) return static_cast<int>(i);
  return -1;
}

ibv_context* ibv_open_device(ibv_device* d) {
  Device* dev = device_of(d);
  if (!dev) {
    errno = ENODEV;
    return nullptr;
  }
  if (!dev->cfg.wire && dev->ifindex == 0) {
    errno = ENODEV;  // the netdev behind the device is gone
    return nullptr;
  }
  auto* c = new Context;
  c->box.self = c;
  c->dev = dev;
  if (!c->async.open()) {
    delete c;
    return nullptr;
  }
  c->cmd_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  ibv_context& ic = c->box.vctx.context;
  ic.device = d;
  ic.cmd_fd = c->cmd_fd;
  ic.async_fd = c->async.read_fd();
  ic.num_comp_vectors = 1;
  pthread_mutex_init(&ic.mutex, nullptr);
  ic.abi_compat = __VERBS_ABI_IS_EXTENDED;
  install_ops(*c);
  {
    std::lock_guard<std::mutex> g(dev->mu);
    dev->contexts.push_back(c);
  }
  return &ic;
}

int ibv_close_device(ibv_context* ic) {
  Context* c = ctx_of(ic);
  Device* dev = c->dev;
  bool last = false;
  {
    std::lock_guard<std::mutex> g(dev->mu);
    std::erase(dev->contexts, c);
    last = dev->contexts.empty();
  }
  if (last) kernel_trap_close(*dev);
  close(c->cmd_fd);
  pthread_mutex_destroy(&ic->mutex);
  delete c;
  return 0;
}

int ibv_query_device(ibv_context* ic, ibv_device_attr* attr) {
  fill_device_attr(*ctx_of(ic)->dev, *attr);
  return 0;
}

int ibv_query_port(ibv_context* ic, uint8_t port, struct _compat_ibv_port_attr* attr) {
  // Old binaries pass the pre-extension struct, which ends before `flags`.
  ibv_port_attr a{};
  int rc = query_port(ic, port, &a, sizeof a);
  if (rc == 0) memcpy(static_cast<void*>(attr), &a, offsetof(ibv_port_attr, flags));
  return rc;
}

int ibv_query_gid(ibv_context* ic, uint8_t port, int index, ibv_gid* gid) {
  if (port != 1 || index < 0 || index >= 256) return EINVAL;
  memset(gid, 0, sizeof *gid);
  if (index == 0) {
    // Link-local GID from the MAC (RoCE v1 default GID).
    gid->raw[0] = 0xfe;
    gid->raw[1] = 0x80;
    const Device& d = *ctx_of(ic)->dev;
    uint64_t g = guid_of(d);
    memcpy(gid->raw + 8, &g, 8);
  }
  return 0;
}

int ibv_query_pkey(ibv_context*, uint8_t port, int index, __be16* pkey) {
  if (port != 1 || index != 0) return EINVAL;
  *pkey = 0xffff;
  return 0;
}

int ibv_get_async_event(ibv_context* ic, ibv_async_event* ev) {
  Context* c = ctx_of(ic);
  EventRecord r{};
  if (!c->async.pop(r)) return -1;
  ev->event_type = static_cast<ibv_event_type>(r.type);
  switch (ev->event_type) {
    case IBV_EVENT_CQ_ERR: {
      ev->element.cq = static_cast<ibv_cq*>(r.obj);
      pthread_mutex_lock(&ev->element.cq->mutex);
      ++cq_of(ev->element.cq)->async_events_read;
      pthread_mutex_unlock(&ev->element.cq->mutex);
      break;
    }
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_LAST_WQE_REACHED:
      ev->element.qp = static_cast<ibv_qp*>(r.obj);
      break;
    default:
      ev->element.port_num = 1;
      break;
  }
  return 0;
}

void ibv_ack_async_event(ibv_async_event* ev) {
  if (ev->event_type != IBV_EVENT_CQ_ERR) return;
  ibv_cq* cq = ev->element.cq;
  pthread_mutex_lock(&cq->mutex);
  ++cq->async_events_completed;
  pthread_cond_broadcast(&cq->cond);
  pthread_mutex_unlock(&cq->mutex);
}

}  // extern "C"
