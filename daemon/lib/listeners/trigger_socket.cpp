#include "daemon/lib/listeners/trigger_socket.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <stdexcept>

namespace rocecap::daemon {
namespace {

constexpr std::size_t kMaxRequest = 64 * 1024;

std::runtime_error sys_error(const std::string& what, const std::string& path) {
  return std::runtime_error(what + " " + path + ": " + std::strerror(errno));
}

sockaddr_un address_of(const std::string& path) {
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (path.size() >= sizeof sa.sun_path) {
    throw std::runtime_error("trigger socket " + path + ": longer than " +
                             std::to_string(sizeof sa.sun_path - 1) + " bytes");
  }
  std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  return sa;
}

std::string duration_words(std::chrono::milliseconds d) {
  return d.count() % 1000 == 0 ? std::to_string(d.count() / 1000) + " s"
                               : std::to_string(d.count()) + " ms";
}

// The process that listens on the connected socket `fd` (SO_PEERCRED: the credentials of the
// listen() caller), as "PID n (name)".
std::string listener_of(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return "PID unknown";
  std::string name;
  std::getline(std::ifstream("/proc/" + std::to_string(cred.pid) + "/comm"), name);
  return "PID " + std::to_string(cred.pid) + (name.empty() ? "" : " (" + name + ")");
}

// A socket file already at `path`. A stale one (connect() refused: its listener is gone, e.g.
// a crashed run) is removed. A live one belongs to another process, most likely another run
// given the same retention.socket: taking it over would steal that run's triggers, so this
// refuses, naming the listener. Anything we cannot tell apart is refused too.
void claim(const std::string& path, const sockaddr_un& sa) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    throw sys_error("cannot check trigger socket", path);
  }
  if (!S_ISSOCK(st.st_mode)) {
    throw std::runtime_error("trigger socket " + path +
                             ": exists and is not a socket; remove it or choose "
                             "retention.socket elsewhere");
  }
  writers::UniqueFd probe;
  probe.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (probe.get() < 0) throw sys_error("socket for", path);
  if (::connect(probe.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof sa) == 0) {
    throw std::runtime_error("trigger socket " + path + " is in use: " + listener_of(probe.get()) +
                             " listens there (another run with the same retention.socket?); "
                             "choose another retention.socket or stop that process");
  }
  if (errno == ECONNREFUSED) {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      throw sys_error("cannot remove the stale trigger socket", path);
    return;
  }
  if (errno == EAGAIN) {
    throw std::runtime_error("trigger socket " + path +
                             " is in use: a live listener is there (its queue is full, so its "
                             "PID cannot be asked); choose another retention.socket");
  }
  throw sys_error("cannot tell whether another process listens on trigger socket", path);
}

std::string call(const TriggerSocket::Handler& handler, const std::string& request) {
  try {
    return handler(request);
  } catch (...) {
    return "{\"ok\":false,\"reason\":\"internal\",\"error\":\"internal error\"}";
  }
}

// One request line (or everything up to the client's shutdown), one answer line.
ConnProtocol line_protocol(TriggerSocket::Handler handler, const ListenerLimits& limits) {
  const std::string incomplete =
      "{\"ok\":false,\"reason\":\"malformed\",\"error\":\"no complete request (one JSON object, "
      "at most 64 KiB, within " +
      duration_words(limits.request_deadline) + ")\"}\n";
  ConnProtocol p;
  p.answer = [h = std::move(handler), incomplete](const std::string& in,
                                                  bool done) -> std::optional<ConnReply> {
    if (in.size() > kMaxRequest) return ConnReply{incomplete, true, true};
    if (in.find('\n') == std::string::npos && !done) return std::nullopt;
    if (in.empty()) return ConnReply{incomplete};
    return ConnReply{call(h, in) + "\n"};
  };
  p.over_limit = "{\"ok\":false,\"reason\":\"busy\",\"error\":\"the trigger socket has " +
                 std::to_string(limits.max_connections) +
                 " connections open (its limit); try again\"}\n";
  p.too_slow = incomplete;
  return p;
}

writers::UniqueFd bind_socket(const std::string& path, const sockaddr_un& sa) {
  writers::UniqueFd fd;
  fd.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) throw sys_error("socket for", path);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof sa) != 0)
    throw sys_error("cannot bind trigger socket", path);
  // 0660: the service user and its group may trigger; nobody else (unix(7): connecting needs
  // write permission on the socket file).
  if (::chmod(path.c_str(), 0660) != 0 || ::listen(fd.get(), SOMAXCONN) != 0) {
    const auto e = sys_error("cannot set up trigger socket", path);
    ::unlink(path.c_str());
    throw e;
  }
  return fd;
}

}  // namespace

TriggerSocket::TriggerSocket(std::string path, Handler handler, ListenerLimits limits)
    : path_(std::move(path)) {
  const sockaddr_un sa = address_of(path_);
  claim(path_, sa);
  writers::UniqueFd fd = bind_socket(path_, sa);
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0) {
    dev_ = st.st_dev;
    ino_ = st.st_ino;
  }
  try {
    server_ = std::make_unique<ConnServer>(std::move(fd), limits,
                                           line_protocol(std::move(handler), limits));
  } catch (...) {
    ::unlink(path_.c_str());
    throw;
  }
}

TriggerSocket::~TriggerSocket() {
  server_.reset();  // no client is served from here on
  // Only our own socket file: should another have replaced it, it is not ours to remove.
  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_)
    ::unlink(path_.c_str());
}

std::string send_trigger(const std::string& path, const std::string& request) {
  const sockaddr_un sa = address_of(path);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw sys_error("socket for", path);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) != 0) {
    const auto e = sys_error("cannot connect to trigger socket", path);
    ::close(fd);
    throw e;
  }
  std::size_t done = 0;
  const std::string line = request + "\n";
  while (done < line.size()) {
    const ssize_t n = ::send(fd, line.data() + done, line.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

}  // namespace rocecap::daemon
