// The two kinds of thread of a run. Neither logs per packet nor throws; both end on their own
// once told to stop (capture) or once every capture loop is done and drained (writer).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>

#include "daemon/lib/run_assembly.hpp"

namespace rocecap::daemon {

// Pins the calling thread; false (with errno-style text in `why`) when the kernel refuses.
bool pin_to_cpu(unsigned cpu, std::string& why);

struct CaptureLoopOptions {
  uint64_t packet_limit = 0;  // stop the run after this many frames on all interfaces; 0: none
  std::chrono::milliseconds housekeeping{100};  // idle flush and drop-counter refresh
};

// One interface's capture thread: source -> Ingest until `stop`, end of file, the packet
// limit or an error; then delivers what the sequencers hold and marks progress.done.
void capture_loop(Runtime& rt, InterfaceRuntime& ir, const std::atomic<bool>& stop,
                  const CaptureLoopOptions& options) noexcept;

struct WriterLoopOptions {
  std::chrono::milliseconds manifest_interval{10'000};
  std::function<void()> write_manifest;  // called on the writer thread
};

// The writer thread: drains every interface's rings into files until all capture loops are
// done and nothing is left, handling rotation requests; then closes (fsyncs) every file.
void writer_loop(Runtime& rt, std::atomic<bool>& rotate, const WriterLoopOptions& options) noexcept;

}  // namespace rocecap::daemon
