// The trigger socket (doc/dumps.md): a Unix stream socket on the capture host, mode 0660
// (owner and group of the service user, as systemd's User= and Group= make them), through which
// `rocecap trigger` sends one JSON request per connection and reads one JSON answer line.
// Served by a ConnServer (conn_server.hpp): every client at once, so idle clients delay nobody;
// a client that sends no complete request within 2 s, or more than 64 KiB, is answered with an
// error and dropped; beyond 1024 open connections the next is refused at once ("busy").
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>

#include "daemon/lib/listeners/conn_server.hpp"

namespace rocecap::daemon {

inline constexpr ListenerLimits kTriggerSocketLimits{1024, std::chrono::milliseconds(2000),
                                                     std::chrono::milliseconds(10000)};

class TriggerSocket {
 public:
  using Handler = std::function<std::string(const std::string& request)>;
  // Binds `path`, sets mode 0660 and starts serving. A socket already there is replaced only
  // when it is stale (connect() is refused: left by a crashed run); when a live listener
  // answers there (another run given the same retention.socket) this throws, naming that
  // listener's PID. Any other file there, or any other failure, throws too, naming the path.
  TriggerSocket(std::string path, Handler handler, ListenerLimits limits = kTriggerSocketLimits);
  ~TriggerSocket();  // stops serving, removes the socket file (if it is still ours)
  TriggerSocket(const TriggerSocket&) = delete;
  TriggerSocket& operator=(const TriggerSocket&) = delete;
  const std::string& path() const noexcept { return path_; }
  std::shared_ptr<const ListenerCounters> counters() const { return server_->counters(); }

 private:
  std::string path_;
  dev_t dev_ = 0;  // the socket file this listener bound, so that only it is removed
  ino_t ino_ = 0;
  std::unique_ptr<ConnServer> server_;
};

// Client side (rocecap trigger): sends `request`, returns the answer; throws
// std::runtime_error when the socket cannot be reached.
std::string send_trigger(const std::string& path, const std::string& request);

}  // namespace rocecap::daemon
