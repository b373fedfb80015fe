#include "daemon/lib/run/capture_loop.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "daemon/lib/reporting/report.hpp"

namespace rocecap::daemon {
namespace {

using Clock = std::chrono::steady_clock;
using capture::PacketSource;
constexpr int kBatch = 256;  // frames per poll: bounds the work between stop checks
constexpr auto kDrainTime = std::chrono::milliseconds(500);

int batch_size(Runtime& rt, const CaptureLoopOptions& o) noexcept {
  if (o.packet_limit == 0) return kBatch;
  const uint64_t seen = rt.packets.load(std::memory_order_relaxed);
  if (seen >= o.packet_limit) return 0;
  return static_cast<int>(std::min<uint64_t>(kBatch, o.packet_limit - seen));
}

// A replayed file has no wire that could drop frames: when the writer falls behind, the
// replay waits for it rather than losing frames to full rings. The batch is cut to the free
// slots of the fullest ring, as every frame of it might be for that stream.
int replay_room(const InterfaceRuntime& ir, int max) noexcept {
  for (const auto& sp : ir.streams)
    max = static_cast<int>(std::min<uint32_t>(static_cast<uint32_t>(max), sp->ring().free_slots()));
  return max;
}

// Once per housekeeping period: the coarse clock for idle detection, the frames a quiet
// stream's sequencer holds, the NIC drops (a sysfs read or a kernel call) and the capture-side
// metrics (last packet time). Every backend, so the dashboard's series advance during a run.
void housekeeping(InterfaceRuntime& ir, int64_t tick) noexcept {
  ir.ingest->set_tick(tick);
  ir.ingest->flush_idle(tick - 2);  // quiet for 1-2 housekeeping periods
  if (const auto d = ir.source->nic_drops()) ir.progress.nic_drops.set(*d);
  publish_capture(ir, unix_now_ns());
}

// Frames the source already holds when the stop comes (socket buffer, completion queue)
// arrived before it: take them in (or count them) rather than leave them uncounted. A poll
// that returns less than it was allowed found the source empty. Bounded: a source that keeps
// delivering full batches is cut off after kDrainTime.
void drain(Runtime& rt, InterfaceRuntime& ir, const CaptureLoopOptions& options) noexcept {
  const auto deadline = Clock::now() + kDrainTime;
  while (Clock::now() < deadline) {
    const int max = batch_size(rt, options);
    if (max == 0) return;
    const int n = ir.source->poll(max);
    if (n <= 0) return;
    rt.packets.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
    if (n < max) return;
  }
}

void finish(InterfaceRuntime& ir) noexcept {
  ir.ingest->flush_all();
  if (const auto d = ir.source->nic_drops()) ir.progress.nic_drops.set(*d);
  publish_capture(ir, unix_now_ns());
  ir.progress.done.store(true, std::memory_order_release);
}

}  // namespace

bool pin_to_cpu(unsigned cpu, std::string& why) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  const int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  if (rc != 0) why = std::strerror(rc);
  return rc == 0;
}

void capture_loop(Runtime& rt, InterfaceRuntime& ir, const std::atomic<bool>& stop,
                  const CaptureLoopOptions& options) noexcept {
  PacketSource& src = *ir.source;
  const bool replay = src.replay();
  // The longest sleep after an empty poll (event mode), so stop and housekeeping stay prompt.
  const int wait_ms = static_cast<int>(std::min<int64_t>(options.housekeeping.count(), 50));
  int64_t tick = 0;
  auto next_housekeeping = Clock::now() + options.housekeeping;
  bool ended = false;
  while (!stop.load(std::memory_order_relaxed)) {
    int max = batch_size(rt, options);
    if (max == 0) break;
    if (replay && (max = replay_room(ir, max)) == 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      // Time spent waiting for the writer is not idleness of the streams.
      next_housekeeping = Clock::now() + options.housekeeping;
      continue;
    }
    const int n = src.poll(max);
    if (n == PacketSource::kEnd) {
      ended = true;  // the end of the replayed file: nothing to drain
      break;
    }
    if (n < 0) break;  // failed: failure() says why
    rt.packets.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
    ir.progress.iterations.fetch_add(1, std::memory_order_relaxed);
    if (n == 0) src.wait(wait_ms);
    if (Clock::now() >= next_housekeeping) {
      next_housekeeping = Clock::now() + options.housekeeping;
      housekeeping(ir, ++tick);
    }
  }
  if (!ended && !replay && !src.failed()) drain(rt, ir, options);
  if (src.failed()) {
    ir.progress.error = src.failure();
    ir.progress.failed.store(true, std::memory_order_release);
  }
  finish(ir);
}

}  // namespace rocecap::daemon
