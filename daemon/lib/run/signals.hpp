// Signals as events read on the main thread (signalfd), never as asynchronous handlers:
// SIGINT/SIGTERM stop the run, SIGHUP rotates files. Construct before starting any thread so
// every thread inherits the blocked mask and only the signalfd sees them. They stay blocked
// after the watcher is gone, so a second stop signal during or after the drain is ignored
// rather than killing the process (see the destructor).
#pragma once

#include <chrono>

namespace rocecap::daemon {

class SignalWatcher {
 public:
  enum class Event { none, stop, rotate };

  SignalWatcher();  // throws std::runtime_error if the signalfd cannot be made
  ~SignalWatcher();
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

  // Waits up to `timeout` for a signal; Event::none when none came.
  Event wait(std::chrono::milliseconds timeout) noexcept;
  int last_signal() const noexcept { return last_; }

 private:
  int fd_ = -1;
  int last_ = 0;
};

}  // namespace rocecap::daemon
