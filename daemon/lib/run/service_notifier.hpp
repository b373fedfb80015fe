// The systemd notification protocol for rocecapd (Type=notify, WatchdogSec=): READY=1 once
// sources are open and groups joined, STATUS= every few seconds, WATCHDOG=1 only while every
// capture loop is making progress (so a stuck capture thread gets the service restarted),
// STOPPING=1 at the stop. Outside systemd (no NOTIFY_SOCKET) every call does nothing.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "daemon/lib/run/run_assembly.hpp"

namespace rocecap::daemon {

class ServiceNotifier {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kStatusInterval{2};

  // Reads NOTIFY_SOCKET / WATCHDOG_USEC of this process (sd_watchdog_enabled).
  ServiceNotifier();

  bool enabled() const noexcept { return enabled_; }
  // Zero when systemd asked for no watchdog.
  std::chrono::microseconds watchdog_interval() const noexcept { return watchdog_; }

  // Before long start-up work (allocating, locking and prefaulting rings): asks systemd for
  // `extra` more time so a big run is not killed by TimeoutStartSec.
  void extend_startup(std::chrono::microseconds extra);
  void ready(const Runtime& rt);
  // Main thread, every ~100 ms while the run goes on.
  void tick(const Runtime& rt, Clock::time_point now);
  void stopping(const std::string& reason);

  // The STATUS= text: streams, packets, lost, drops so far.
  static std::string status_line(const Runtime& rt);

 private:
  bool capture_progressed(const Runtime& rt);
  void send(const std::string& message);

  bool enabled_ = false;
  std::chrono::microseconds watchdog_{0};
  Clock::time_point next_status_{};
  Clock::time_point next_ping_{};
  std::vector<uint64_t> seen_iterations_;  // per interface, at the last ping
};

}  // namespace rocecap::daemon
