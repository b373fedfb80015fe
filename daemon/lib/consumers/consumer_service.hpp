// The consumer socket (doc/consumers.md): a Unix SOCK_SEQPACKET socket through which other
// processes attach to the run's stream rings and read them in place. One thread and one epoll
// set serve every consumer: a consumer is read only when it has sent something, a hello must
// arrive within 2 s, at most consumers.max_consumers are attached, and the one beyond is told
// "busy" and closed. Nothing here touches the capture thread: what a consumer does (or fails to
// do) reaches capture only through hold-mode pins, which capture/retention.hpp bounds on the
// writer thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "capture/retention.hpp"
#include "common/relaxed_counter.hpp"
#include "writers/consumer_log.hpp"
#include "writers/unique_fd.hpp"

namespace rocecap::daemon {

// One stream consumers may read.
struct ConsumerStream {
  uint32_t index = 0;  // the run's stream number
  std::string name;    // "<antenna>@<group>:<port>" (VDIF threads: "/t<thread>" added)
  std::string antenna;
  std::string format;  // codif, udp, vdif
  writers::ConsumerLog* log = nullptr;
  capture::Retention* retention = nullptr;  // hold-mode pins
  std::string cuda_ipc;      // hex of the payload slab's CUDA IPC handle (GPU payload memory)
  uint64_t cuda_offset = 0;  // the slab's offset in that allocation
  int gpu_device = -1;
};

struct ConsumerServiceOptions {
  std::string socket;
  std::string group;  // empty: the process's group
  std::size_t max_consumers = 16;
  uint64_t hold_frames = 1024;
  std::chrono::milliseconds hold_time{1000};
  std::chrono::milliseconds hello_deadline{2000};
  // Log lines (warning or not): each consumer attached, gone or detached; refusals at most one
  // line a second (a flood of them is summed). Called on the service's thread.
  std::function<void(bool warning, const std::string& line)> log;
};

// Per attached consumer and stream, as the consumer last reported it (its acks).
struct ConsumerStreamProgress {
  uint32_t stream = 0;
  uint64_t position = 0;  // next descriptor it will read
  uint64_t read = 0, missed = 0;
  uint64_t lag = 0;  // descriptors published it has not read
};

struct ConsumerSnapshot {
  uint64_t id = 0;
  std::string name;  // "<name>#<id>"
  std::string mode;  // lossy, hold
  int pid = 0;
  unsigned uid = 0;
  std::vector<ConsumerStreamProgress> streams;
};

struct ConsumerCounters {
  common::RelaxedCounter connections;  // accepted connections
  common::RelaxedCounter attached;     // hellos answered with the streams
  common::RelaxedCounter refused;      // busy, malformed or not allowed hellos, hello deadline
  common::RelaxedCounter detached;     // consumer_dropped: hold bound passed
  common::RelaxedCounter closed;       // consumers that went away
  common::RelaxedCounter open;         // consumers attached now (gauge)
};

class ConsumerService {
 public:
  // Binds the socket (a stale one is replaced, a live one refused naming its PID, as the
  // trigger socket), mode 0660, and starts serving. Throws std::runtime_error naming the path.
  ConsumerService(ConsumerServiceOptions options, std::vector<ConsumerStream> streams);
  ~ConsumerService();  // closes every consumer (see close_all()), removes the socket file
  ConsumerService(const ConsumerService&) = delete;
  ConsumerService& operator=(const ConsumerService&) = delete;

  std::vector<ConsumerSnapshot> snapshot() const;
  std::shared_ptr<const ConsumerCounters> counters() const { return counters_; }
  const std::vector<ConsumerStream>& streams() const noexcept { return streams_; }
  const std::string& path() const noexcept { return options_.socket; }

 private:
  struct Attached;
  using Clock = std::chrono::steady_clock;
  void serve();
  void accept_all(Clock::time_point now);
  void on_readable(uint64_t id, Clock::time_point now);
  std::string hello(Attached& c, const std::string& text);
  bool send_streams(Attached& c);
  void on_ack(Attached& c, const std::string& text);
  void check_holds(Clock::time_point now);
  void drop(uint64_t id, const std::string& why, bool detached);
  void close_politely(writers::UniqueFd fd, Clock::time_point now);
  void on_closing_readable(uint64_t id);
  void expire_closing(Clock::time_point now);
  void close_all();
  void log(bool warning, const std::string& line) const;
  void log_refusal(const std::string& why);

  ConsumerServiceOptions options_;
  std::vector<ConsumerStream> streams_;
  std::vector<writers::UniqueFd> control_ro_, header_ro_, payload_ro_;  // per stream
  writers::UniqueFd listen_, epoll_, stop_;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  std::shared_ptr<ConsumerCounters> counters_ = std::make_shared<ConsumerCounters>();
  std::unordered_map<uint64_t, std::unique_ptr<Attached>> conns_;  // by id, under mu_
  mutable std::mutex mu_;  // conns_ between the thread and snapshot()
  uint64_t next_id_ = 2;   // 0: the listening socket, 1: the stop event
  // Connections we closed (refused, detached, gone wrong), their write side shut, kept (the
  // service thread's only) until the client closes or a short linger ends: see close_politely().
  struct Closing {
    writers::UniqueFd fd;
    Clock::time_point deadline;
  };
  std::unordered_map<uint64_t, Closing> closing_;
  Clock::time_point last_refusal_log_{};
  uint64_t refusals_unlogged_ = 0;
  std::thread thread_;
};

}  // namespace rocecap::daemon
