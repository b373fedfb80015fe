// Receive-QP state changes, shared by start-up (throwing) and recovery on the capture thread
// (error codes, no allocation).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>

namespace rocecap::capture::verbs {

const char* state_name(ibv_qp_state s) noexcept;
// ibv_modify_qp to `state` (with the port for INIT); the errno-style code, 0 on success.
int set_state(ibv_qp* qp, ibv_qp_state state, uint8_t port) noexcept;
// ibv_query_qp's state into `state`; the errno-style code, 0 on success. For a raw packet QP the
// kernel reads the receive queue's state from the device and keeps it as its cached state
// (drivers/infiniband/hw/mlx5/qp.c mlx5_ib_query_qp -> query_raw_packet_qp_rq_state).
int query_state(ibv_qp* qp, ibv_qp_state& state) noexcept;
// Start-up: throws VerbsError "<what>: ibv_modify_qp to <STATE>".
void modify(ibv_qp* qp, ibv_qp_state state, uint8_t port, const std::string& what);

// CLOCK_REALTIME and CLOCK_MONOTONIC in ns.
int64_t wall_ns() noexcept;
int64_t monotonic_ns() noexcept;

}  // namespace rocecap::capture::verbs
