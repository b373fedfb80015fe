#include "daemon/lib/trigger_socket.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

namespace rocecap::daemon {
namespace {

constexpr std::size_t kMaxRequest = 64 * 1024;
constexpr int kReadTimeoutMs = 2000;

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

void write_all(int fd, const std::string& s) {
  std::size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::send(fd, s.data() + done, s.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

// Reads until a newline, the peer's shutdown, the size bound or the timeout.
bool read_request(int fd, std::string& out) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kReadTimeoutMs);
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    pollfd p{fd, POLLIN, 0};
    if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) return false;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return !out.empty();
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > kMaxRequest) return false;
    if (out.find('\n') != std::string::npos) return true;
  }
}

}  // namespace

TriggerSocket::TriggerSocket(std::string path, Handler handler)
    : path_(std::move(path)), handler_(std::move(handler)) {
  const sockaddr_un sa = address_of(path_);
  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      throw std::runtime_error("trigger socket " + path_ +
                               ": exists and is not a socket; remove it or choose "
                               "retention.socket elsewhere");
    }
    ::unlink(path_.c_str());  // left by an earlier run of this daemon (the run lock is ours)
  }
  listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw sys_error("socket for", path_);
  if (::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) != 0) {
    const auto e = sys_error("cannot bind trigger socket", path_);
    ::close(listen_fd_);
    throw e;
  }
  // 0660: the service user and its group may trigger; nobody else (unix(7): connecting needs
  // write permission on the socket file).
  if (::chmod(path_.c_str(), 0660) != 0 || ::listen(listen_fd_, 16) != 0) {
    const auto e = sys_error("cannot set up trigger socket", path_);
    ::close(listen_fd_);
    ::unlink(path_.c_str());
    throw e;
  }
  stop_fd_ = ::eventfd(0, EFD_CLOEXEC);
  if (stop_fd_ < 0) {
    const auto e = sys_error("eventfd for", path_);
    ::close(listen_fd_);
    ::unlink(path_.c_str());
    throw e;
  }
  thread_ = std::thread([this] { serve(); });
}

TriggerSocket::~TriggerSocket() {
  const uint64_t one = 1;
  (void)!::write(stop_fd_, &one, sizeof one);
  if (thread_.joinable()) thread_.join();
  ::close(stop_fd_);
  ::close(listen_fd_);
  ::unlink(path_.c_str());
}

void TriggerSocket::serve() {
  for (;;) {
    pollfd p[2] = {{listen_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (p[1].revents != 0) return;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    answer(fd);
    ::close(fd);
  }
}

void TriggerSocket::answer(int fd) {
  std::string request;
  if (!read_request(fd, request)) {
    write_all(fd,
              "{\"ok\":false,\"reason\":\"malformed\",\"error\":\"no complete request (one JSON "
              "object, at most 64 KiB, within 2 s)\"}\n");
    return;
  }
  std::string reply;
  try {
    reply = handler_(request);
  } catch (const std::exception& e) {
    reply = std::string("{\"ok\":false,\"reason\":\"internal\",\"error\":\"") + "internal error" +
            "\"}";
  }
  write_all(fd, reply + "\n");
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
  write_all(fd, request + "\n");
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
