#include "daemon/lib/listeners/conn_server.hpp"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace rocecap::daemon {
namespace {

constexpr uint64_t kListenId = 0;
constexpr uint64_t kStopId = 1;
constexpr std::size_t kReadChunk = 16 * 1024;
// Bytes a client may send beyond what the protocol accepts before it is simply closed: the
// protocol answers long before (its own bounds are 64 KiB + headers).
constexpr std::size_t kHardRequestBound = 1 << 20;
// After the answer: the client's leftovers are read (and dropped) this long before closing, so
// that closing with unread data (which sends a reset) cannot destroy the answer in flight.
constexpr auto kLinger = std::chrono::milliseconds(1000);
// Out of file descriptors with no spare left: accepting pauses this long instead of spinning.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);

writers::UniqueFd owned(int fd, const char* what) {
  if (fd < 0) throw std::runtime_error(std::string(what) + ": " + std::strerror(errno));
  writers::UniqueFd u;
  u.reset(fd);
  return u;
}

int open_spare() {
  return ::open("/dev/null", O_RDONLY | O_CLOEXEC);
}

void add_to(int epoll, int fd, uint64_t id, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = id;
  if (::epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &ev) != 0)
    throw std::runtime_error(std::string("epoll_ctl: ") + std::strerror(errno));
}

}  // namespace

ConnServer::ConnServer(writers::UniqueFd listener, ListenerLimits limits, ConnProtocol protocol)
    : listen_(std::move(listener)),
      epoll_(owned(::epoll_create1(EPOLL_CLOEXEC), "epoll_create1")),
      stop_(owned(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), "eventfd")),
      limits_(limits),
      protocol_(std::move(protocol)) {
  // accept4 must never block the loop: the listening socket is non-blocking.
  const int flags = ::fcntl(listen_.get(), F_GETFL);
  if (flags < 0 || ::fcntl(listen_.get(), F_SETFL, flags | O_NONBLOCK) != 0)
    throw std::runtime_error(std::string("fcntl: ") + std::strerror(errno));
  spare_.reset(open_spare());
  add_to(epoll_.get(), listen_.get(), kListenId, EPOLLIN);
  add_to(epoll_.get(), stop_.get(), kStopId, EPOLLIN);
  thread_ = std::thread([this] { serve(); });
}

ConnServer::~ConnServer() {
  const uint64_t one = 1;
  (void)!::write(stop_.get(), &one, sizeof one);
  if (thread_.joinable()) thread_.join();
  counters_->open.set(0);  // the connections close with conns_
}

void ConnServer::serve() {
  epoll_event events[64];
  for (;;) {
    const int timeout = expire(Clock::now());
    counters_->open.set(conns_.size());
    const int n = ::epoll_wait(epoll_.get(), events, 64, timeout);
    if (n < 0 && errno != EINTR) return;
    const auto now = Clock::now();
    for (int i = 0; i < n; ++i) {
      const uint64_t id = events[i].data.u64;
      if (id == kStopId) return;
      if (id == kListenId)
        accept_all(now);
      else
        on_ready(id, now);
    }
  }
}

void ConnServer::accept_all(Clock::time_point now) {
  for (;;) {
    writers::UniqueFd fd;
    fd.reset(::accept4(listen_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (fd.get() < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if ((errno == EMFILE || errno == ENFILE) && accept_without_fd()) continue;
      if (errno == EMFILE || errno == ENFILE) pause_accepting(now);
      return;  // EAGAIN: all taken
    }
    counters_->accepted.add();
    if (conns_.size() >= limits_.max_connections) {
      counters_->over_limit.add();
      refuse(fd.get());
      continue;
    }
    add(std::move(fd), now);
  }
}

// Out of descriptors: the spare one is given up for a moment to accept the waiting client and
// refuse it at once (it would otherwise wait in the backlog, unanswered), then taken back.
bool ConnServer::accept_without_fd() {
  if (spare_.get() < 0) return false;
  spare_.reset();
  writers::UniqueFd fd;
  fd.reset(::accept4(listen_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
  const bool accepted = fd.get() >= 0;
  if (accepted) {
    counters_->accepted.add();
    counters_->no_fd.add();
    refuse(fd.get());
    fd.reset();
  }
  spare_.reset(open_spare());
  return accepted;
}

void ConnServer::pause_accepting(Clock::time_point now) {
  epoll_event ev{};
  ev.data.u64 = kListenId;
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, listen_.get(), &ev);
  accept_paused_until_ = now + kAcceptPause;
}

// The refusal is small enough for an empty socket buffer. What the client already sent is read
// first: closing a socket with unread data resets the connection, which could destroy the
// refusal before the client reads it.
void ConnServer::refuse(int fd) {
  char buf[4096];
  for (int i = 0; i < 16 && ::recv(fd, buf, sizeof buf, 0) > 0; ++i) {
  }
  (void)!::send(fd, protocol_.over_limit.data(), protocol_.over_limit.size(), MSG_NOSIGNAL);
  ::shutdown(fd, SHUT_WR);
}

void ConnServer::add(writers::UniqueFd fd, Clock::time_point now) {
  const uint64_t id = next_id_++;
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.u64 = id;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd.get(), &ev) != 0) return;  // closed: ENOMEM
  conns_.try_emplace(id, id, std::move(fd), now + limits_.request_deadline);
}

void ConnServer::on_ready(uint64_t id, Clock::time_point now) {
  const auto it = conns_.find(id);
  if (it == conns_.end()) return;  // closed earlier in this batch
  Conn& c = it->second;
  if (c.phase == Phase::reading)
    read_request(c, now);
  else if (c.phase == Phase::writing)
    write_reply(c, now);
  else if (c.phase == Phase::lingering)
    drain(c);
  if (c.phase == Phase::done) conns_.erase(it);
}

void ConnServer::read_request(Conn& c, Clock::time_point now) {
  char buf[kReadChunk];
  while (c.phase == Phase::reading) {
    const ssize_t n = ::recv(c.fd.get(), buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n < 0 || c.in.size() > kHardRequestBound) {
      c.phase = Phase::done;
      return;
    }
    if (n == 0) c.client_done = true;
    c.in.append(buf, static_cast<std::size_t>(n));
    std::optional<ConnReply> reply = protocol_.answer(c.in, c.client_done);
    if (reply)
      start_reply(c, std::move(*reply), now);
    else if (c.client_done)
      c.phase = Phase::done;  // an incomplete request and nobody sending the rest
  }
}

void ConnServer::start_reply(Conn& c, ConnReply reply, Clock::time_point now) {
  if (reply.too_large) counters_->too_large.add();
  c.out = std::move(reply.bytes);
  c.sent = 0;
  c.final = reply.final;
  if (c.final) c.deadline = now + limits_.answer_deadline;
  c.phase = Phase::writing;
  write_reply(c, now);
  if (c.phase == Phase::writing) watch(c, EPOLLOUT);
}

void ConnServer::write_reply(Conn& c, Clock::time_point now) {
  while (c.sent < c.out.size()) {
    const ssize_t n =
        ::send(c.fd.get(), c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {
      c.phase = Phase::done;
      return;
    }
    c.sent += static_cast<std::size_t>(n);
  }
  c.out.clear();
  if (!c.final) {  // an interim answer: the request goes on
    c.phase = Phase::reading;
    watch(c, EPOLLIN | EPOLLRDHUP);
    return;
  }
  ::shutdown(c.fd.get(), SHUT_WR);
  c.phase = Phase::lingering;
  c.deadline = now + kLinger;
  watch(c, EPOLLIN | EPOLLRDHUP);
}

void ConnServer::drain(Conn& c) {
  char buf[kReadChunk];
  for (;;) {
    const ssize_t n = ::recv(c.fd.get(), buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) break;
  }
  c.phase = Phase::done;
}

void ConnServer::watch(const Conn& c, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = c.id;
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, c.fd.get(), &ev);
}

// Deadlines: a request not complete in time is answered `too_slow`; an answer not taken in
// time, or a lingering close, ends. Returns the epoll timeout to the next deadline (-1: none).
int ConnServer::expire(Clock::time_point now) {
  if (accept_paused_until_ && *accept_paused_until_ <= now) {
    accept_paused_until_.reset();
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kListenId;
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, listen_.get(), &ev);
  }
  std::optional<Clock::time_point> next = accept_paused_until_;
  for (auto it = conns_.begin(); it != conns_.end();) {
    Conn& c = it->second;
    if (c.deadline <= now && c.phase != Phase::lingering) counters_->deadline.add();
    if (c.deadline <= now && c.phase == Phase::reading)
      start_reply(c, ConnReply{protocol_.too_slow}, now);
    else if (c.deadline <= now)
      c.phase = Phase::done;
    if (c.phase == Phase::done) {
      it = conns_.erase(it);
      continue;
    }
    next = next ? std::min(*next, c.deadline) : c.deadline;
    ++it;
  }
  if (!next) return -1;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(*next - now).count();
  return static_cast<int>(std::max<decltype(ms)>(ms, 0));
}

}  // namespace rocecap::daemon
