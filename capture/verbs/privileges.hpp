// Start-up checks for the verbs backend, so a missing privilege is a clear message before any
// thread starts rather than an EPERM from deep inside QP creation.
#pragma once

#include <cstdint>
#include <string>

namespace rocecap::capture::verbs {

// Empty when the process may capture with verbs, else why not and how to fix it:
// raw packet QPs and flow rules need CAP_NET_RAW; registering `pinned_bytes` of ring memory
// needs RLIMIT_MEMLOCK at least that large, or CAP_IPC_LOCK.
std::string check_privileges(uint64_t pinned_bytes);

}  // namespace rocecap::capture::verbs
