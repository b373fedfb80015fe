// The capture thread of one interface, the same loop for every backend: it drives the
// interface's capture::PacketSource (capture/packet_source.hpp) and knows no transport.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "daemon/lib/run/run_assembly.hpp"

namespace rocecap::daemon {

// Pins the calling thread; false (with errno-style text in `why`) when the kernel refuses.
bool pin_to_cpu(unsigned cpu, std::string& why);

struct CaptureLoopOptions {
  uint64_t packet_limit = 0;  // stop the run after this many frames on all interfaces; 0: none
  // Idle flush, drop-counter refresh and the capture-side metrics (last packet time).
  std::chrono::milliseconds housekeeping{100};
};

// One interface's capture thread: source -> Ingest until `stop`, the end of a replayed file,
// the packet limit or a source failure; then takes in what the source had already received
// at the stop, delivers what the sequencers hold and marks progress.done. Never throws.
void capture_loop(Runtime& rt, InterfaceRuntime& ir, const std::atomic<bool>& stop,
                  const CaptureLoopOptions& options) noexcept;

}  // namespace rocecap::daemon
