// The two kinds of thread of a run: the capture loop (capture_loop.hpp, one per interface) and
// the writer loop (here, one per run). Neither logs per packet nor throws; both end on their own
// once told to stop (capture) or once every capture loop is done and drained (writer).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>

#include "daemon/lib/run/capture_loop.hpp"
#include "daemon/lib/run/run_assembly.hpp"

namespace rocecap::daemon {

// A writer's sleep when it found nothing to write. Each wake-up costs a context switch: at
// 200 us, switches were a quarter of rocecapd's CPU time per packet in perf record of
// bench/kernel_path_bench.sh (BENCHMARKS.md, "Kernel path"). 1 ms of frames is far below any
// ring's depth (4096 slots per stream).
inline constexpr std::chrono::milliseconds kWriterIdle{1};

struct WriterLoopOptions {
  std::chrono::milliseconds manifest_interval{10'000};
  std::function<void()> write_manifest;  // called on the writer thread
};

// The writer thread: drains every interface's rings into files until all capture loops are
// done and nothing is left, handling rotation requests; then closes (fsyncs) every file.
void writer_loop(Runtime& rt, std::atomic<bool>& rotate, const WriterLoopOptions& options) noexcept;

}  // namespace rocecap::daemon
