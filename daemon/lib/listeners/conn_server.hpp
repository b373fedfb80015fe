// The connection loop under both trigger listeners (the Unix trigger socket and the HTTP
// listener of /metrics and /trigger; doc/dumps.md). One thread and one epoll set serve every
// connection at once: a client is read only when it has sent something, so idle or slow
// clients never hold up anybody else's trigger. Each connection has a deadline (a complete
// request within `request_deadline`, the answer taken within `answer_deadline`), at most
// `max_connections` are open, and the one beyond is sent a refusal and closed at once. Every
// connection dropped for a bound is counted (ListenerCounters, shown in /metrics).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>

#include "common/relaxed_counter.hpp"
#include "writers/output_file.hpp"

namespace rocecap::daemon {

struct ListenerLimits {
  std::size_t max_connections = 256;
  std::chrono::milliseconds request_deadline{5000};  // from accept to a complete request
  std::chrono::milliseconds answer_deadline{10000};  // for the client to take the answer
};

// Written by the listener's thread only, read at scrape time.
struct ListenerCounters {
  common::RelaxedCounter accepted;    // connections accepted (refused ones included)
  common::RelaxedCounter open;        // connections open now
  common::RelaxedCounter over_limit;  // refused: max_connections were open
  common::RelaxedCounter no_fd;       // refused: the process is out of file descriptors
  common::RelaxedCounter deadline;    // dropped: no complete request (or answer not taken) in time
  common::RelaxedCounter too_large;   // answered with an error: the request broke a size bound
};

struct ConnReply {
  std::string bytes;
  bool final = true;       // false: an interim answer (HTTP 100 Continue), reading goes on
  bool too_large = false;  // the request broke a size bound (counted)
};

struct ConnProtocol {
  // Everything received so far and whether the client has shut down its sending side: the
  // reply, or nullopt while more is needed (with `client_done`: there is nobody to answer).
  // Runs on the listener's thread; must not throw. It bounds the request's size itself.
  std::function<std::optional<ConnReply>(const std::string& received, bool client_done)> answer;
  std::string over_limit;  // sent to a connection beyond max_connections, before closing it
  std::string too_slow;    // sent when request_deadline passes before a complete request
};

class ConnServer {
 public:
  // Serves the listening socket `listener` (bound, listening) until destroyed. Throws
  // std::runtime_error when the epoll set or its thread cannot be made.
  ConnServer(writers::UniqueFd listener, ListenerLimits limits, ConnProtocol protocol);
  ~ConnServer();  // stops the thread; open connections are closed unanswered
  ConnServer(const ConnServer&) = delete;
  ConnServer& operator=(const ConnServer&) = delete;

  int listen_fd() const noexcept { return listen_.get(); }
  std::shared_ptr<const ListenerCounters> counters() const { return counters_; }

 private:
  using Clock = std::chrono::steady_clock;
  enum class Phase { reading, writing, lingering, done };
  struct Conn {
    Conn(uint64_t i, writers::UniqueFd f, Clock::time_point d)
        : id(i), fd(std::move(f)), deadline(d) {}
    uint64_t id = 0;
    writers::UniqueFd fd;
    std::string in, out;
    std::size_t sent = 0;
    bool final = true;
    bool client_done = false;
    Phase phase = Phase::reading;
    Clock::time_point deadline;
  };

  void serve();
  void accept_all(Clock::time_point now);
  bool accept_without_fd();
  void refuse(int fd);
  void add(writers::UniqueFd fd, Clock::time_point now);
  void on_ready(uint64_t id, Clock::time_point now);
  void read_request(Conn& c, Clock::time_point now);
  void start_reply(Conn& c, ConnReply reply, Clock::time_point now);
  void write_reply(Conn& c, Clock::time_point now);
  void drain(Conn& c);
  void watch(const Conn& c, uint32_t events);
  int expire(Clock::time_point now);
  void pause_accepting(Clock::time_point now);

  writers::UniqueFd listen_, epoll_, stop_, spare_;
  ListenerLimits limits_;
  ConnProtocol protocol_;
  std::shared_ptr<ListenerCounters> counters_ = std::make_shared<ListenerCounters>();
  std::unordered_map<uint64_t, Conn> conns_;  // by id: an fd number is reused, an id never
  uint64_t next_id_ = 2;                      // 0: the listening socket, 1: the stop event
  std::optional<Clock::time_point> accept_paused_until_;
  std::thread thread_;
};

}  // namespace rocecap::daemon
