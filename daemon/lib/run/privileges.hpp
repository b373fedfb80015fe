// Start-up checks of the privileges a capture backend needs, so a missing one is a clear
// message before any thread starts rather than an EPERM from deep inside libpcap or QP creation.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rocecap::daemon {

// Empty when the process may capture, else what is missing and how to provide it.
// Live capture (libpcap on a netdev, raw packet QPs and flow rules) needs CAP_NET_RAW;
// `pinned_bytes` of memory that must stay locked (verbs registrations) needs RLIMIT_MEMLOCK at
// least that large, or CAP_IPC_LOCK. `backend` names the config value in the message.
std::string check_privileges(std::string_view backend, uint64_t pinned_bytes);

}  // namespace rocecap::daemon
