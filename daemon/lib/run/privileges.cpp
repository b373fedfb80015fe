#include "daemon/lib/run/privileges.hpp"

#include <sys/resource.h>

#include <fstream>
#include <sstream>

namespace rocecap::daemon {
namespace {

constexpr int kCapNetRaw = 13;  // linux/capability.h
constexpr int kCapIpcLock = 14;

// Effective capability set from /proc/self/status (no libcap dependency).
uint64_t effective_caps() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("CapEff:", 0) == 0) return std::stoull(line.substr(7), nullptr, 16);
  }
  return 0;
}

}  // namespace

std::string check_privileges(std::string_view backend, uint64_t pinned_bytes) {
  const uint64_t caps = effective_caps();
  if ((caps & (uint64_t{1} << kCapNetRaw)) == 0) {
    return "capture.backend " + std::string(backend) +
           " needs CAP_NET_RAW to capture live; run as root or grant it (systemd: "
           "AmbientCapabilities=CAP_NET_RAW CAP_IPC_LOCK; by hand: setpriv --inh-caps=+net_raw "
           "--ambient-caps=+net_raw)";
  }
  if (pinned_bytes == 0) return {};
  if ((caps & (uint64_t{1} << kCapIpcLock)) != 0) return {};
  rlimit lim{};
  if (getrlimit(RLIMIT_MEMLOCK, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY ||
      lim.rlim_cur >= pinned_bytes) {
    return {};
  }
  std::ostringstream msg;
  msg << "capture.backend " << backend << " registers " << pinned_bytes
      << " bytes (ring memory and libmlx5's queues) but the "
      << "memlock limit is " << lim.rlim_cur << " bytes and CAP_IPC_LOCK is missing; raise it "
      << "(systemd: LimitMEMLOCK=infinity) or lower capture.ring_depth";
  return msg.str();
}

}  // namespace rocecap::daemon
