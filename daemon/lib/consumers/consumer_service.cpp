#include "daemon/lib/consumers/consumer_service.hpp"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "daemon/lib/consumers/hello.hpp"

namespace rocecap::daemon {
namespace abi = consumer::abi;
using writers::UniqueFd;

namespace {

constexpr std::size_t kMaxPending = 64;    // connections that have not sent their hello yet
constexpr std::size_t kMaxClosing = 1024;  // connections closed by us, kept until the client closes
constexpr auto kClosingLinger = std::chrono::seconds(2);
constexpr int kMessagesPerTurn = 64;  // read from one connection before serving the others
constexpr auto kEndLinger = std::chrono::milliseconds(500);  // the run's end: see close_all()

std::runtime_error sys_error(const std::string& what, const std::string& path) {
  return std::runtime_error(what + " " + path + ": " + std::strerror(errno));
}

sockaddr_un address_of(const std::string& path) {
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (path.size() >= sizeof sa.sun_path)
    throw std::runtime_error("consumer socket " + path + ": longer than 107 bytes");
  std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  return sa;
}

std::string peer_pid(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return "PID unknown";
  std::string name;
  std::getline(std::ifstream("/proc/" + std::to_string(cred.pid) + "/comm"), name);
  return "PID " + std::to_string(cred.pid) + (name.empty() ? "" : " (" + name + ")");
}

// As the trigger socket: a stale socket file (its listener gone) is replaced, a live one is
// another run's and refused, naming its process.
void claim(const std::string& path, const sockaddr_un& sa) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    throw sys_error("cannot check consumer socket", path);
  }
  if (!S_ISSOCK(st.st_mode))
    throw std::runtime_error("consumer socket " + path + ": exists and is not a socket");
  UniqueFd probe(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (probe.get() < 0) throw sys_error("socket for", path);
  if (::connect(probe.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof sa) == 0) {
    throw std::runtime_error("consumer socket " + path + " is in use: " + peer_pid(probe.get()) +
                             " listens there; choose another consumers.socket");
  }
  if (errno != ECONNREFUSED && errno != EPROTOTYPE)
    throw sys_error("cannot tell whether another process listens on consumer socket", path);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    throw sys_error("cannot remove the stale consumer socket", path);
}

// A read-only descriptor of the same memory: consumers can map it, never write it
// (mmap(PROT_WRITE, MAP_SHARED) of an O_RDONLY descriptor fails with EACCES).
UniqueFd read_only(int fd) {
  if (fd < 0) return UniqueFd();
  UniqueFd ro(::open(("/proc/self/fd/" + std::to_string(fd)).c_str(), O_RDONLY | O_CLOEXEC));
  if (ro.get() < 0) throw sys_error("cannot reopen ring memory read-only:", std::to_string(fd));
  return ro;
}

bool send_message(int fd, const std::string& text, const int* fds, std::size_t nfds) {
  iovec iov{const_cast<char*>(text.data()), text.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * abi::kFdsPerStream)] = {};
  if (nfds > 0) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
    std::memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
  }
  for (;;) {
    const ssize_t n = ::sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    return n == static_cast<ssize_t>(text.size());
  }
}

}  // namespace

struct ConsumerService::Attached {
  uint64_t id = 0;
  UniqueFd fd;
  Clock::time_point deadline;
  bool attached = false;
  ConsumerSnapshot snap;
  std::vector<uint32_t> streams;  // indexes into streams_
  struct Hold {
    std::size_t pin = 0;
    uint64_t at = 0;          // position pinned
    Clock::time_point since;  // when it began holding frames at `at`
  };
  std::vector<Hold> holds;  // hold mode, one per stream
};

ConsumerService::ConsumerService(ConsumerServiceOptions options,
                                 std::vector<ConsumerStream> streams)
    : options_(std::move(options)), streams_(std::move(streams)) {
  for (const ConsumerStream& s : streams_) {
    control_ro_.push_back(read_only(s.log->control().fd()));
    const capture::StreamRing& ring = s.log->stream().ring();
    header_ro_.push_back(read_only(ring.header_memory().fd()));
    const auto* host = dynamic_cast<const capture::memory::HostMemory*>(&ring.payload_memory());
    payload_ro_.push_back(read_only(host != nullptr ? host->fd() : -1));
  }
  const sockaddr_un sa = address_of(options_.socket);
  claim(options_.socket, sa);
  listen_.reset(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (listen_.get() < 0) throw sys_error("socket for", options_.socket);
  if (::bind(listen_.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof sa) != 0)
    throw sys_error("cannot bind consumer socket", options_.socket);
  gid_t gid = static_cast<gid_t>(-1);
  if (!options_.group.empty()) {
    const group* g = ::getgrnam(options_.group.c_str());
    if (g == nullptr) {
      ::unlink(options_.socket.c_str());
      throw std::runtime_error("consumers.group " + options_.group + ": no such group");
    }
    gid = g->gr_gid;
  }
  // 0660: the service user and its group may attach (unix(7): connect needs write access).
  if (::chmod(options_.socket.c_str(), 0660) != 0 ||
      (gid != static_cast<gid_t>(-1) && ::chown(options_.socket.c_str(), -1, gid) != 0) ||
      ::listen(listen_.get(), SOMAXCONN) != 0) {
    const auto e = sys_error("cannot set up consumer socket", options_.socket);
    ::unlink(options_.socket.c_str());
    throw e;
  }
  struct stat st {};
  if (::stat(options_.socket.c_str(), &st) == 0) {
    dev_ = st.st_dev;
    ino_ = st.st_ino;
  }
  epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
  stop_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  epoll_event ev{EPOLLIN, {.u64 = 0}};
  epoll_event sev{EPOLLIN, {.u64 = 1}};
  if (epoll_.get() < 0 || stop_.get() < 0 ||
      ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, listen_.get(), &ev) != 0 ||
      ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, stop_.get(), &sev) != 0) {
    ::unlink(options_.socket.c_str());
    throw sys_error("cannot watch consumer socket", options_.socket);
  }
  thread_ = std::thread([this] { serve(); });
}

ConsumerService::~ConsumerService() {
  const uint64_t one = 1;
  if (::write(stop_.get(), &one, sizeof one) < 0) {
  }
  if (thread_.joinable()) thread_.join();
  close_all();
  for (auto& [id, c] : conns_) {
    for (std::size_t k = 0; k < c->holds.size(); ++k)
      streams_[c->streams[k]].retention->unpin(c->holds[k].pin);
  }
  struct stat st {};
  if (::lstat(options_.socket.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_)
    ::unlink(options_.socket.c_str());
}

void ConsumerService::serve() {
  pthread_setname_np(pthread_self(), "rc-consumers");
  epoll_event events[64];
  for (;;) {
    const int n = ::epoll_wait(epoll_.get(), events, 64, 20);
    const Clock::time_point now = Clock::now();
    for (int i = 0; i < n; ++i) {
      const uint64_t id = events[i].data.u64;
      if (id == 1) return;
      if (id == 0) {
        accept_all(now);
      } else if (closing_.count(id) != 0) {
        on_closing_readable(id);
      } else {
        on_readable(id, now);
      }
    }
    check_holds(now);
    expire_closing(now);
  }
}

void ConsumerService::accept_all(Clock::time_point now) {
  for (;;) {
    UniqueFd fd(::accept4(listen_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (fd.get() < 0) return;  // EAGAIN, or out of descriptors: the next turn tries again
    counters_->connections.add();
    // Attached consumers are bounded by max_consumers; connections still owing their hello
    // by kMaxPending of their own, so silent connections cannot lock real consumers out.
    const std::size_t attached = counters_->open.get();
    std::size_t pending = 0;
    {
      std::lock_guard lock(mu_);
      pending = conns_.size() - std::min(conns_.size(), attached);
    }
    if (attached >= options_.max_consumers || pending >= kMaxPending) {
      send_message(fd.get(),
                   attached >= options_.max_consumers
                       ? "error busy: " + std::to_string(options_.max_consumers) +
                             " consumers are attached (consumers.max_consumers)"
                       : "error busy: " + std::to_string(kMaxPending) +
                             " connections have not said hello yet; try again",
                   nullptr, 0);
      close_politely(std::move(fd), now);
      counters_->refused.add();
      log_refusal(attached >= options_.max_consumers ? "busy (consumers.max_consumers)"
                                                     : "busy (too many connections without hello)");
      continue;
    }
    auto c = std::make_unique<Attached>();
    c->id = next_id_++;
    c->deadline = now + options_.hello_deadline;
    epoll_event ev{EPOLLIN | EPOLLRDHUP, {.u64 = c->id}};
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd.get(), &ev) != 0) continue;
    c->fd = std::move(fd);
    std::lock_guard lock(mu_);
    conns_.emplace(c->id, std::move(c));
  }
}

namespace {

// Reads and discards what the peer sent; true once it has closed its side (EOF).
bool discard_input(int fd) {
  char buf[abi::kMessageBytes];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT | MSG_TRUNC);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) return true;
    if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK;
  }
}

}  // namespace

// What we tell a client last (a refusal, a detach) must reach it. Closing a connection whose
// receive queue holds anything unread (a hello, an ack) makes Linux set ECONNRESET on the
// client (net/unix/af_unix.c, unix_release_sock: unread data at close), and a SOCK_SEQPACKET
// receive reports that error before any queued message (net/core/datagram.c,
// __skb_try_recv_datagram checks sock_error first): the client would see a reset, not "error
// busy" or "detached ...". So the write side is shut after the message and the connection
// kept, its input discarded, until the client closes it or kClosingLinger passes; beyond
// kMaxClosing such connections it is closed at once.
void ConsumerService::close_politely(UniqueFd fd, Clock::time_point now) {
  ::shutdown(fd.get(), SHUT_WR);
  if (discard_input(fd.get()) || closing_.size() >= kMaxClosing) return;
  const uint64_t id = next_id_++;
  epoll_event ev{EPOLLIN | EPOLLRDHUP, {.u64 = id}};
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd.get(), &ev) != 0) return;
  closing_.emplace(id, Closing{std::move(fd), now + kClosingLinger});
}

void ConsumerService::on_closing_readable(uint64_t id) {
  auto it = closing_.find(id);
  if (it == closing_.end() || !discard_input(it->second.fd.get())) return;
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, it->second.fd.get(), nullptr);
  closing_.erase(it);
}

void ConsumerService::expire_closing(Clock::time_point now) {
  for (auto it = closing_.begin(); it != closing_.end();) {
    if (now < it->second.deadline) {
      ++it;
      continue;
    }
    discard_input(it->second.fd.get());
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, it->second.fd.get(), nullptr);
    it = closing_.erase(it);
  }
}

// The run's end. A consumer reports every few ms, so at the end one's ack is often unread, and
// closing would reset it (see close_politely): it would take the end of the run for being
// dropped. So every connection's write side is shut (the client's next receive reads the end
// and it closes its side) and input discarded until each client closed or kEndLinger passed.
void ConsumerService::close_all() {
  std::vector<pollfd> open;
  auto watch = [&open](int fd) {
    if (!discard_input(fd)) open.push_back({fd, POLLIN, 0});
  };
  for (auto& [id, c] : conns_) {
    ::shutdown(c->fd.get(), SHUT_WR);
    watch(c->fd.get());
  }
  for (auto& [id, c] : closing_)
    watch(c.fd.get());
  const Clock::time_point end = Clock::now() + kEndLinger;
  while (!open.empty()) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(end - Clock::now()).count();
    if (left <= 0) break;
    if (::poll(open.data(), open.size(), static_cast<int>(left)) < 0 && errno != EINTR) break;
    std::erase_if(open, [](const pollfd& p) { return p.revents != 0 && discard_input(p.fd); });
  }
  for (const pollfd& p : open)  // silent clients: what they sent last, not a reset, if we can
    discard_input(p.fd);
}

void ConsumerService::on_readable(uint64_t id, Clock::time_point now) {
  Attached* c = nullptr;
  {
    std::lock_guard lock(mu_);
    auto it = conns_.find(id);
    if (it == conns_.end()) return;
    c = it->second.get();
  }
  char buf[abi::kMessageBytes + 1];
  // A bounded number of messages a turn (the epoll set is level-triggered: the rest is read
  // next turn): a consumer sending acks as fast as they are read would otherwise keep this
  // thread from every other consumer and from the stop event.
  for (int turn = 0; turn < kMessagesPerTurn; ++turn) {
    // A consumer sends no descriptors; any it tries to are discarded (no msg_control).
    const ssize_t n = ::recv(c->fd.get(), buf, abi::kMessageBytes, MSG_DONTWAIT | MSG_TRUNC);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) return drop(id, "", false);
    if (static_cast<std::size_t>(n) > abi::kMessageBytes) {
      send_message(c->fd.get(), "error message longer than 4096 bytes", nullptr, 0);
      counters_->refused.add();
      log_refusal("a message longer than 4096 bytes");
      return drop(id, "", false);
    }
    const std::string text(buf, static_cast<std::size_t>(n));
    if (c->attached) {
      on_ack(*c, text);
      continue;
    }
    // The bound holds at attach time too: connections accepted while others were still
    // owing their hello may all say it.
    const std::string error = counters_->open.get() >= options_.max_consumers
                                  ? "busy: " + std::to_string(options_.max_consumers) +
                                        " consumers are attached (consumers.max_consumers)"
                                  : hello(*c, text);
    if (!error.empty()) {
      send_message(c->fd.get(), "error " + error, nullptr, 0);
      counters_->refused.add();
      log_refusal(error.substr(0, 200));
      return drop(id, "", false);
    }
    if (!send_streams(*c)) return drop(id, "did not take the stream descriptors", false);
    c->attached = true;
    counters_->attached.add();
    counters_->open.add();
    log(false, "consumers: " + c->snap.name + " (PID " + std::to_string(c->snap.pid) + ", uid " +
                   std::to_string(c->snap.uid) + ") attached in " + c->snap.mode + " mode to " +
                   std::to_string(c->streams.size()) + " stream(s)");
    (void)now;
  }
}

// Validates the hello and resolves the streams; an error text, or empty when attached.
std::string ConsumerService::hello(Attached& c, const std::string& text) {
  Hello h;
  if (std::string e = parse_hello(text, h); !e.empty()) return e;
  std::vector<std::string> names;
  for (const ConsumerStream& s : streams_)
    names.push_back(s.name);
  std::vector<uint32_t> picked;
  for (uint32_t i = 0; i < streams_.size(); ++i) {
    const bool wanted = h.all || std::any_of(h.streams.begin(), h.streams.end(), [&](auto& n) {
                          return n == streams_[i].name || n == streams_[i].antenna;
                        });
    if (wanted) picked.push_back(i);
  }
  for (const std::string& n : h.streams) {
    const bool found = std::any_of(streams_.begin(), streams_.end(),
                                   [&](const auto& s) { return n == s.name || n == s.antenna; });
    if (!found) return "stream " + n + " is not offered on this socket (consumers.streams)";
  }
  if (picked.empty()) return "no stream is offered on this socket";
  c.streams = picked;
  c.snap.id = c.id;
  c.snap.name = h.name + "#" + std::to_string(c.id);
  c.snap.mode = h.hold ? "hold" : "lossy";
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(c.fd.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
    c.snap.pid = cred.pid;
    c.snap.uid = cred.uid;
  }
  for (uint32_t i : picked)
    c.snap.streams.push_back({streams_[i].index, 0, 0, 0, 0});
  if (!h.hold) return "";
  for (uint32_t i : picked) {
    capture::Retention* r = streams_[i].retention;
    uint64_t at = 0;
    const auto pin =
        r == nullptr ? std::nullopt : r->hold(r->range().tail, options_.hold_frames, at);
    if (!pin) {
      for (std::size_t k = 0; k < c.holds.size(); ++k)
        streams_[c.streams[k]].retention->unpin(c.holds[k].pin);
      c.holds.clear();
      return "busy: no hold pin free on stream " + streams_[i].name;
    }
    c.holds.push_back({*pin, at, Clock::now()});
  }
  return "";
}

bool ConsumerService::send_streams(Attached& c) {
  for (uint32_t i : c.streams) {
    const ConsumerStream& s = streams_[i];
    const bool gpu = payload_ro_[i].get() < 0;
    // position=: where "live" starts for this consumer, taken before it counts as attached,
    // so that a capture waiting for it (consumers.wait_for) cannot publish anything earlier.
    std::string text = "stream index=" + std::to_string(s.index) + " name=" + s.name +
                       " format=" + s.format + " payload_memory=" + (gpu ? "gpu" : "host") +
                       " position=" + std::to_string(s.log->published());
    if (gpu && !s.cuda_ipc.empty())
      text += " cuda_ipc=" + s.cuda_ipc + " cuda_offset=" + std::to_string(s.cuda_offset) +
              " gpu_device=" + std::to_string(s.gpu_device);
    const int fds[3] = {control_ro_[i].get(), header_ro_[i].get(), payload_ro_[i].get()};
    if (!send_message(c.fd.get(), text, fds, gpu ? 2 : 3)) return false;
  }
  const std::string ready = "ready streams=" + std::to_string(c.streams.size()) +
                            " mode=" + c.snap.mode +
                            " hold_frames=" + std::to_string(options_.hold_frames) +
                            " hold_ms=" + std::to_string(options_.hold_time.count());
  return send_message(c.fd.get(), ready, nullptr, 0);
}

// "ack K NEXT_POS READ MISSED ACK_POS" lines; anything else is ignored (a newer client).
void ConsumerService::on_ack(Attached& c, const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    Ack a;
    if (!parse_ack(line, a)) continue;
    for (std::size_t k = 0; k < c.streams.size(); ++k) {
      const ConsumerStream& s = streams_[c.streams[k]];
      if (s.index != a.stream) continue;
      std::lock_guard lock(mu_);
      ConsumerStreamProgress& p = c.snap.streams[k];
      p.position = a.next;
      p.read = a.read;
      p.missed = a.missed;
      if (k < c.holds.size() && a.ack > c.holds[k].at) {
        s.retention->move_pin(c.holds[k].pin, a.ack);
        c.holds[k].at = a.ack;
        c.holds[k].since = Clock::now();
      }
    }
  }
}

// Hello deadlines, and hold-mode bounds: a pin retention dropped for holding more than
// hold_frames, or one holding frames for longer than hold_time, detaches its consumer.
void ConsumerService::check_holds(Clock::time_point now) {
  std::vector<std::pair<uint64_t, std::string>> gone;
  {
    std::lock_guard lock(mu_);
    for (auto& [id, c] : conns_) {
      if (!c->attached) {
        if (now > c->deadline) gone.emplace_back(id, "");
        continue;
      }
      for (std::size_t k = 0; k < c->holds.size(); ++k) {
        capture::Retention& r = *streams_[c->streams[k]].retention;
        Attached::Hold& h = c->holds[k];
        if (r.detached(h.pin)) {
          gone.emplace_back(id, "held more than " + std::to_string(options_.hold_frames) +
                                    " frames of " + streams_[c->streams[k]].name +
                                    " (consumers.hold_frames)");
          break;
        }
        if (r.range().tail <= h.at) h.since = now;  // holds nothing yet
        if (now - h.since > options_.hold_time) {
          gone.emplace_back(id, "held frames of " + streams_[c->streams[k]].name + " for over " +
                                    std::to_string(options_.hold_time.count()) +
                                    " ms (consumers.hold_time)");
          break;
        }
      }
    }
  }
  for (const auto& [id, why] : gone) {
    if (why.empty()) {
      counters_->refused.add();
      log_refusal("no hello within " + std::to_string(options_.hello_deadline.count()) + " ms");
    }
    drop(id, why, !why.empty());
  }
}

void ConsumerService::drop(uint64_t id, const std::string& why, bool detached) {
  std::unique_ptr<Attached> c;
  {
    std::lock_guard lock(mu_);
    auto it = conns_.find(id);
    if (it == conns_.end()) return;
    c = std::move(it->second);
    conns_.erase(it);
  }
  for (std::size_t k = 0; k < c->holds.size(); ++k)
    streams_[c->streams[k]].retention->unpin(c->holds[k].pin);
  if (detached) {
    send_message(c->fd.get(), "detached " + why, nullptr, 0);
    counters_->detached.add();
    log(true, "consumers: " + c->snap.name + " detached: " + why);
  }
  if (c->attached) {
    counters_->closed.add();
    counters_->open.sub();
    uint64_t read = 0, missed = 0;
    for (const auto& p : c->snap.streams) {
      read += p.read;
      missed += p.missed;
    }
    if (!detached)
      log(false, "consumers: " + c->snap.name + " went away (it reported " + std::to_string(read) +
                     " frames read, " + std::to_string(missed) + " missed)");
  }
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, c->fd.get(), nullptr);
  close_politely(std::move(c->fd), Clock::now());
}

void ConsumerService::log(bool warning, const std::string& line) const {
  if (options_.log) options_.log(warning, line);
}

void ConsumerService::log_refusal(const std::string& why) {
  const Clock::time_point now = Clock::now();
  if (now - last_refusal_log_ < std::chrono::seconds(1)) {
    ++refusals_unlogged_;
    return;
  }
  std::string line = "consumers: refused a connection: " + why;
  if (refusals_unlogged_ > 0)
    line += " (and " + std::to_string(refusals_unlogged_) + " more refusals in the last seconds)";
  log(false, line);
  last_refusal_log_ = now;
  refusals_unlogged_ = 0;
}

std::vector<ConsumerSnapshot> ConsumerService::snapshot() const {
  std::lock_guard lock(mu_);
  std::vector<ConsumerSnapshot> out;
  for (const auto& [id, c] : conns_) {
    if (!c->attached) continue;
    ConsumerSnapshot s = c->snap;
    for (std::size_t k = 0; k < s.streams.size(); ++k) {
      const uint64_t published = streams_[c->streams[k]].log->published();
      s.streams[k].lag = published > s.streams[k].position ? published - s.streams[k].position : 0;
    }
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.id < b.id; });
  return out;
}

}  // namespace rocecap::daemon
