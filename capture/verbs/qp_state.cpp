#include "capture/verbs/qp_state.hpp"

#include <ctime>

#include "capture/verbs/verbs_objects.hpp"

namespace rocecap::capture::verbs {

const char* state_name(ibv_qp_state s) noexcept {
  switch (s) {
    case IBV_QPS_RESET:
      return "RESET";
    case IBV_QPS_INIT:
      return "INIT";
    case IBV_QPS_RTR:
      return "RTR";
    case IBV_QPS_ERR:
      return "ERR";
    default:
      return "?";
  }
}

int set_state(ibv_qp* qp, ibv_qp_state state, uint8_t port) noexcept {
  ibv_qp_attr a{};
  a.qp_state = state;
  int mask = IBV_QP_STATE;
  if (state == IBV_QPS_INIT) {
    a.port_num = port;
    mask |= IBV_QP_PORT;
  }
  return ibv_modify_qp(qp, &a, mask);
}

int query_state(ibv_qp* qp, ibv_qp_state& state) noexcept {
  ibv_qp_attr a{};
  ibv_qp_init_attr init{};
  const int rc = ibv_query_qp(qp, &a, IBV_QP_STATE, &init);
  if (rc == 0) state = a.qp_state;
  return rc;
}

void modify(ibv_qp* qp, ibv_qp_state state, uint8_t port, const std::string& what) {
  if (const int rc = set_state(qp, state, port); rc != 0) {
    throw VerbsError(what + ": ibv_modify_qp to " + state_name(state), rc);
  }
}

int64_t wall_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

int64_t monotonic_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace rocecap::capture::verbs
