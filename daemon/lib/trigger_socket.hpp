// The trigger socket (doc/dumps.md): a Unix stream socket on the capture host, mode 0660
// (owner and group of the service user, as systemd's User= and Group= make them), through which
// `rocecap trigger` sends one JSON request per connection and reads one JSON answer line.
// Served by its own thread; a client that sends nothing for 2 s or more than 64 KiB is
// answered with an error and dropped, so a stuck client cannot block the others for long.
#pragma once

#include <functional>
#include <string>
#include <thread>

namespace rocecap::daemon {

class TriggerSocket {
 public:
  using Handler = std::function<std::string(const std::string& request)>;
  // Binds `path` (a stale socket left by a crashed run is replaced; any other file there is an
  // error), sets mode 0660 and starts the thread. Throws std::runtime_error naming the path.
  TriggerSocket(std::string path, Handler handler);
  ~TriggerSocket();  // stops the thread, removes the socket file
  TriggerSocket(const TriggerSocket&) = delete;
  TriggerSocket& operator=(const TriggerSocket&) = delete;
  const std::string& path() const noexcept { return path_; }

 private:
  void serve();
  void answer(int fd);

  std::string path_;
  Handler handler_;
  int listen_fd_ = -1;
  int stop_fd_ = -1;  // eventfd: wakes serve() for the stop
  std::thread thread_;
};

// Client side (rocecap trigger): sends `request`, returns the answer; throws
// std::runtime_error when the socket cannot be reached.
std::string send_trigger(const std::string& path, const std::string& request);

}  // namespace rocecap::daemon
