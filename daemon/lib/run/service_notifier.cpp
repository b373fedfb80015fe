#include "daemon/lib/run/service_notifier.hpp"

#include <systemd/sd-daemon.h>

#include <cstdlib>

namespace rocecap::daemon {

ServiceNotifier::ServiceNotifier() {
  const char* socket = std::getenv("NOTIFY_SOCKET");
  enabled_ = socket != nullptr && *socket != '\0';
  uint64_t usec = 0;
  if (enabled_ && sd_watchdog_enabled(0, &usec) > 0) watchdog_ = std::chrono::microseconds(usec);
}

void ServiceNotifier::send(const std::string& message) {
  if (enabled_) (void)sd_notify(0, message.c_str());  // best effort: systemd may be gone
}

std::string ServiceNotifier::status_line(const Runtime& rt) {
  std::size_t streams = 0;
  uint64_t packets = 0, lost = 0, drops = 0;
  for (const auto& ir : rt.interfaces) {
    streams += ir->streams.size();
    drops += ir->progress.nic_drops.get();
    for (const auto& sp : ir->streams) {
      const capture::SequencerStats q = sp->sequencer().stats();
      packets += q.received;
      lost += q.lost;
      const capture::RingStats r = sp->ring().stats();
      drops += r.ring_full_drops + r.dump_pinned_drops + r.consumer_pinned_drops;
    }
  }
  return "capturing " + std::to_string(streams) + " streams: " + std::to_string(packets) +
         " packets, " + std::to_string(lost) + " lost, " + std::to_string(drops) + " dropped";
}

void ServiceNotifier::extend_startup(std::chrono::microseconds extra) {
  send("EXTEND_TIMEOUT_USEC=" + std::to_string(extra.count()) + "\nSTATUS=allocating rings");
}

void ServiceNotifier::ready(const Runtime& rt) {
  seen_iterations_.assign(rt.interfaces.size(), 0);
  for (std::size_t i = 0; i < rt.interfaces.size(); ++i)
    seen_iterations_[i] = rt.interfaces[i]->progress.iterations.load(std::memory_order_relaxed);
  const auto now = Clock::now();
  next_status_ = now + kStatusInterval;
  next_ping_ = now + watchdog_ / 2;
  send("READY=1\nSTATUS=" + status_line(rt));
}

// True when every capture loop turned (or ended) since the last ping; then remembers where
// they are now.
bool ServiceNotifier::capture_progressed(const Runtime& rt) {
  if (seen_iterations_.size() != rt.interfaces.size())
    seen_iterations_.assign(rt.interfaces.size(), 0);
  for (std::size_t i = 0; i < rt.interfaces.size(); ++i) {
    const CaptureProgress& p = rt.interfaces[i]->progress;
    if (p.done.load(std::memory_order_acquire)) continue;
    if (p.iterations.load(std::memory_order_relaxed) == seen_iterations_[i]) return false;
  }
  for (std::size_t i = 0; i < rt.interfaces.size(); ++i)
    seen_iterations_[i] = rt.interfaces[i]->progress.iterations.load(std::memory_order_relaxed);
  return true;
}

void ServiceNotifier::tick(const Runtime& rt, Clock::time_point now) {
  if (!enabled_) return;
  if (now >= next_status_) {
    next_status_ = now + kStatusInterval;
    send("STATUS=" + status_line(rt));
  }
  // Checked every tick after the half period: a loop that resumes is pinged at once, one
  // that stays stuck lets the watchdog expire.
  if (watchdog_.count() > 0 && now >= next_ping_ && capture_progressed(rt)) {
    next_ping_ = now + watchdog_ / 2;
    send("WATCHDOG=1");
  }
}

void ServiceNotifier::stopping(const std::string& reason) {
  send("STOPPING=1\nSTATUS=stopping: " + reason);
}

}  // namespace rocecap::daemon
