// Name strings and the small process-wide calls of the API.
#include <cerrno>
#include <cstring>

#include "sv.hpp"

extern "C" {

const char* ibv_wc_status_str(ibv_wc_status status) {
  static const char* const names[] = {"success",
                                      "local length error",
                                      "local QP operation error",
                                      "local EE context operation error",
                                      "local protection error",
                                      "Work Request Flushed Error",
                                      "memory management operation error",
                                      "bad response error",
                                      "local access error",
                                      "remote invalid request error",
                                      "remote access error",
                                      "remote operation error",
                                      "transport retry counter exceeded",
                                      "RNR retry counter exceeded",
                                      "local RDD violation error",
                                      "remote invalid RD request",
                                      "aborted error",
                                      "invalid EE context number",
                                      "invalid EE context state",
                                      "fatal error",
                                      "response timeout error",
                                      "general error",
                                      "TM error",
                                      "TM rendezvous error"};
  const auto i = static_cast<unsigned>(status);
  return i < sizeof names / sizeof names[0] ? names[i] : "unknown";
}

const char* ibv_event_type_str(ibv_event_type event) {
  static const char* const names[] = {"CQ error",
                                      "local work queue catastrophic error",
                                      "invalid request local work queue error",
                                      "local access violation work queue error",
                                      "communication established",
                                      "send queue drained",
                                      "path migrated",
                                      "path migration request error",
                                      "local catastrophic error",
                                      "port active",
                                      "port error",
                                      "LID change",
                                      "P_Key change",
                                      "SM change",
                                      "SRQ catastrophic error",
                                      "SRQ limit reached",
                                      "last WQE reached",
                                      "client reregistration",
                                      "GID table change",
                                      "WQ fatal"};
  const auto i = static_cast<unsigned>(event);
  return i < sizeof names / sizeof names[0] ? names[i] : "unknown";
}

const char* ibv_node_type_str(ibv_node_type t) {
  switch (t) {
    case IBV_NODE_CA:
      return "InfiniBand channel adapter";
    case IBV_NODE_SWITCH:
      return "InfiniBand switch";
    case IBV_NODE_ROUTER:
      return "InfiniBand router";
    case IBV_NODE_RNIC:
      return "iWARP NIC";
    default:
      return "unknown";
  }
}

const char* ibv_port_state_str(ibv_port_state s) {
  switch (s) {
    case IBV_PORT_NOP:
      return "PORT_NOP";
    case IBV_PORT_DOWN:
      return "PORT_DOWN";
    case IBV_PORT_INIT:
      return "PORT_INIT";
    case IBV_PORT_ARMED:
      return "PORT_ARMED";
    case IBV_PORT_ACTIVE:
      return "PORT_ACTIVE";
    case IBV_PORT_ACTIVE_DEFER:
      return "PORT_ACTIVE_DEFER";
    default:
      return "invalid";
  }
}

int ibv_fork_init(void) {
  return 0;
}

enum ibv_fork_status ibv_is_fork_initialized(void) {
  return IBV_FORK_UNNEEDED;
}

int ibv_attach_mcast(ibv_qp*, const ibv_gid*, uint16_t) {
  return EOPNOTSUPP;
}
int ibv_detach_mcast(ibv_qp*, const ibv_gid*, uint16_t) {
  return EOPNOTSUPP;
}

ibv_ah* ibv_create_ah(ibv_pd*, ibv_ah_attr*) {
  errno = EOPNOTSUPP;
  return nullptr;
}
int ibv_destroy_ah(ibv_ah*) {
  return EOPNOTSUPP;
}

}  // extern "C"

// Calls of later version nodes. They keep every node of the version script non-empty, as in
// rdma-core, and answer the way mlx5 does for a raw packet QP on Ethernet.
extern "C" {

int ibv_get_pkey_index(ibv_context*, uint8_t port, __be16 pkey) {
  return port == 1 && pkey == 0xffff ? 0 : -1;
}

ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp*) {
  errno = EOPNOTSUPP;  // raw QPs here are created without IBV_QP_INIT_ATTR_SEND_OPS_FLAGS
  return nullptr;
}

int ibv_query_ece(ibv_qp*, ibv_ece*) {
  return EOPNOTSUPP;
}
int ibv_set_ece(ibv_qp*, ibv_ece*) {
  return EOPNOTSUPP;
}

int _ibv_query_gid_ex(ibv_context* ctx, uint32_t port, uint32_t index, ibv_gid_entry* entry,
                      uint32_t flags, size_t entry_size) {
  if (flags || entry_size < sizeof(ibv_gid_entry) || port != 1 || index != 0) return EINVAL;
  memset(entry, 0, sizeof *entry);
  if (int rc = ibv_query_gid(ctx, 1, 0, &entry->gid)) return rc;
  entry->gid_index = 0;
  entry->port_num = 1;
  entry->gid_type = IBV_GID_TYPE_ROCE_V1;
  entry->ndev_ifindex = static_cast<uint32_t>(sv::ctx_of(ctx)->dev->ifindex);
  return 0;
}

int ibv_query_qp_data_in_order(ibv_qp*, ibv_wr_opcode, uint32_t) {
  return 1;  // the engine writes a frame completely before its completion
}

}  // extern "C"
