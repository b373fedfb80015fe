#include "daemon/lib/run/open_files.hpp"

#include <cerrno>
#include <cstring>

#include "daemon/lib/listeners/http_listener.hpp"
#include "daemon/lib/listeners/trigger_socket.hpp"

namespace rocecap::daemon {
namespace {

// The run's own descriptors beside the listeners' connections: output files (several per
// stream with rotation), rings, sockets, epoll and event fds.
constexpr rlim_t kRunOwn = 1024;

std::string limit_words(rlim_t v) {
  return v == RLIM_INFINITY ? std::string("unlimited") : std::to_string(v);
}

}  // namespace

rlim_t open_files_wanted() {
  return kTriggerSocketLimits.max_connections + kHttpLimits.max_connections + kRunOwn;
}

OpenFilesNote raise_open_files_limit(rlim_t wanted) {
  rlimit l{};
  if (::getrlimit(RLIMIT_NOFILE, &l) != 0)
    return {true, std::string("open files: getrlimit(RLIMIT_NOFILE): ") + std::strerror(errno)};
  if (l.rlim_cur >= wanted) return {};
  const rlim_t before = l.rlim_cur;
  const std::string why =
      " (the trigger socket and HTTP listener take up to " +
      std::to_string(kTriggerSocketLimits.max_connections + kHttpLimits.max_connections) +
      " connections; rocecapd wants " + std::to_string(wanted) + ")";
  if (l.rlim_max > l.rlim_cur) {
    l.rlim_cur = l.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &l) != 0)
      return {true, "open files: cannot raise the soft limit RLIMIT_NOFILE from " +
                        limit_words(before) + ": " + std::strerror(errno) + why};
  }
  if (l.rlim_cur < wanted) {
    return {true, "open files: RLIMIT_NOFILE is " + limit_words(l.rlim_cur) + " (the hard limit)" +
                      why +
                      "; clients beyond the free descriptors are refused (no_fd): raise "
                      "LimitNOFILE= or ulimit -Hn"};
  }
  return {false, "open files: raised the soft limit RLIMIT_NOFILE from " + limit_words(before) +
                     " to the hard limit " + limit_words(l.rlim_cur) + why};
}

}  // namespace rocecap::daemon
