#include "daemon/lib/loops.hpp"

#include <pthread.h>
#include <sched.h>

#include <cstring>
#include <thread>

#include "daemon/lib/report.hpp"

namespace rocecap::daemon {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kBatch = 256;
constexpr auto kDrainTime =
    std::chrono::milliseconds(500);  // frames per dispatch: bounds the work between stop checks

void refresh_drops(InterfaceRuntime& ir) noexcept {
  const pcapsrc::SourceStats s = ir.source->stats();
  ir.progress.nic_drops.set(s.kernel_drops + s.interface_drops);
}

int batch_size(Runtime& rt, const CaptureLoopOptions& o, int largest) noexcept {
  if (o.packet_limit == 0) return largest;
  const uint64_t seen = rt.packets.load(std::memory_order_relaxed);
  if (seen >= o.packet_limit) return 0;
  return static_cast<int>(std::min<uint64_t>(largest, o.packet_limit - seen));
}

// A replayed file has no deadline, so it must never overrun a ring: each batch waits until
// every ring has room for all of it. The reorder window may hold W slots of a ring, so a
// batch is at most slots - W frames and the writer can always make that room.
int replay_batch(const InterfaceRuntime& ir) noexcept {
  int64_t batch = kBatch;
  for (const auto& sp : ir.streams) {
    const int64_t room = int64_t{sp->ring().slots()} - sp->sequencer().config().reorder_window;
    batch = std::min(batch, room);
  }
  return static_cast<int>(std::max<int64_t>(batch, 1));
}

bool rings_have_room(const InterfaceRuntime& ir, int frames) noexcept {
  for (const auto& sp : ir.streams) {
    const capture::RingStats s = sp->ring().stats();
    const uint64_t in_use = s.taken - s.returned - s.released;
    if (sp->ring().slots() - in_use < static_cast<uint64_t>(frames)) return false;
  }
  return true;
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

namespace {

// Frames the kernel already holds when the stop comes arrived before it: take them in (or
// count them) rather than leave them uncounted in the socket buffer. Bounded: a source that
// keeps delivering full batches is cut off after kDrainTime.
void drain(Runtime& rt, InterfaceRuntime& ir, const CaptureLoopOptions& options) {
  if (!ir.source->is_live()) return;
  const auto deadline = Clock::now() + kDrainTime;
  while (Clock::now() < deadline) {
    const int max = batch_size(rt, options, kBatch);
    if (max == 0) return;
    const int n = ir.source->dispatch(*ir.ingest, max);
    if (n <= 0) return;
    rt.packets.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
    if (n < max) return;
  }
}

void finish(InterfaceRuntime& ir) noexcept {
  ir.ingest->flush_all();
  refresh_drops(ir);
  publish_capture(ir, unix_now_ns());
  ir.progress.done.store(true, std::memory_order_release);
}

}  // namespace

void capture_loop(Runtime& rt, InterfaceRuntime& ir, const std::atomic<bool>& stop,
                  const CaptureLoopOptions& options) noexcept {
  int64_t tick = 0;
  auto next_housekeeping = Clock::now() + options.housekeeping;
  const bool replay = !ir.source->is_live();
  const int largest = replay ? replay_batch(ir) : kBatch;
  try {
    while (!stop.load(std::memory_order_relaxed)) {
      const int max = batch_size(rt, options, largest);
      if (max == 0) break;
      if (replay && !rings_have_room(ir, max)) {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
        continue;
      }
      const int n = ir.source->dispatch(*ir.ingest, max);
      if (n < 0) return finish(ir);  // end of the replayed file: nothing to drain
      rt.packets.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
      ir.progress.iterations.fetch_add(1, std::memory_order_relaxed);
      if (Clock::now() >= next_housekeeping) {
        next_housekeeping += options.housekeeping;
        ir.ingest->set_tick(++tick);
        ir.ingest->flush_idle(tick - 2);  // quiet for 1-2 housekeeping periods
        refresh_drops(ir);
        publish_capture(ir, unix_now_ns());
      }
    }
    drain(rt, ir, options);
  } catch (const std::exception& e) {
    ir.progress.error = e.what();
    ir.progress.failed.store(true, std::memory_order_release);
  }
  finish(ir);
}

void writer_loop(Runtime& rt, std::atomic<bool>& rotate,
                 const WriterLoopOptions& options) noexcept {
  auto next_manifest = Clock::now() + options.manifest_interval;
  for (;;) {
    // Read before draining: what a finished loop published is then seen by this pass.
    bool all_done = true;
    for (const auto& ir : rt.interfaces) {
      all_done = all_done && ir->progress.done.load(std::memory_order_acquire);
    }
    std::size_t n = 0;
    for (const auto& ir : rt.interfaces) {
      n += ir->writer->poll();
      publish_writer(*ir, unix_now_ns());
    }
    if (rotate.exchange(false)) {
      for (const auto& ir : rt.interfaces)
        ir->writer->request_rotation();
    }
    if (options.write_manifest && Clock::now() >= next_manifest) {
      next_manifest += options.manifest_interval;
      options.write_manifest();
    }
    if (n != 0) continue;
    if (all_done) break;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  for (const auto& ir : rt.interfaces) {
    (void)ir->writer->close();  // errors were reported
    publish_writer(*ir, unix_now_ns());
  }
}

}  // namespace rocecap::daemon
