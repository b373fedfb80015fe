#include "daemon/lib/loops.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "daemon/lib/report.hpp"

namespace rocecap::daemon {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kBatch = 256;  // frames per dispatch: bounds the work between stop checks
constexpr auto kDrainTime = std::chrono::milliseconds(500);
// The writer's sleep when it found nothing to write. Each wake-up costs a context switch: at
// 200 us, switches were a quarter of rocecapd's CPU time per packet in perf record of
// bench/kernel_path_bench.sh (BENCHMARKS.md, "Kernel path"). 1 ms of frames is far below any
// ring's depth (4096 slots per stream).
constexpr auto kWriterIdle = std::chrono::milliseconds(1);

void refresh_drops(InterfaceRuntime& ir) noexcept {
#ifdef ROCECAP_HAVE_VERBS
  if (ir.verbs) {
    try {  // a sysfs read, once per housekeeping period
      if (const auto d = ir.verbs->nic_drops()) ir.progress.nic_drops.set(*d);
    } catch (const std::exception&) {
    }
    return;
  }
#endif
  if (ir.packet_ring) {
    const capture::packet::ZeroCopyStats z = ir.packet_ring->zero_copy_stats();
    ir.progress.zero_copy_lent.set(z.lent_frames);
    ir.progress.zero_copy_copied.set(z.copied_frames);
    ir.progress.held_block_stalls.set(z.held_block_stalls);
  }
  const capture::pcap::SourceStats s =
      ir.packet_ring ? ir.packet_ring->stats() : ir.source->stats();
  ir.progress.nic_drops.set(s.kernel_drops + s.interface_drops);
}

// One batch from the interface's pcap-family source; -1 at the end of a replayed file.
int dispatch(InterfaceRuntime& ir, int max) {
  if (!ir.packet_ring) return ir.source->dispatch(*ir.ingest, max);
  const int n = ir.packet_ring->dispatch(*ir.ingest, max);
  if (ir.packet_ring->failed()) throw std::runtime_error(ir.packet_ring->failure());
  return n;
}

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
  if (ir.source && !ir.source->is_live()) return;
  const auto deadline = Clock::now() + kDrainTime;
  while (Clock::now() < deadline) {
    const int max = batch_size(rt, options);
    if (max == 0) return;
    const int n = dispatch(ir, max);
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

#ifdef ROCECAP_HAVE_VERBS
// Completions already in the CQ at the stop arrived before it: take them in. Bounded by
// kDrainTime, like the pcap drain.
void drain_verbs(Runtime& rt, InterfaceRuntime& ir, const CaptureLoopOptions& options) noexcept {
  const auto deadline = Clock::now() + kDrainTime;
  while (Clock::now() < deadline) {
    const int max = batch_size(rt, options);
    if (max == 0) return;
    const int n = ir.verbs->poll(max);
    if (n <= 0) return;
    rt.packets.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
  }
}

// The verbs capture thread of one device: poll the shared CQ (spinning, or sleeping on the
// completion channel in event mode) until stop, the packet limit or a device failure.
void verbs_loop(Runtime& rt, InterfaceRuntime& ir, const std::atomic<bool>& stop,
                const CaptureLoopOptions& options) noexcept {
  capture::verbs::VerbsSource& src = *ir.verbs;
  const bool event_mode = rt.config->capture.poll_mode == config::PollMode::event;
  const int wait_ms = static_cast<int>(std::min<int64_t>(options.housekeeping.count(), 50));
  int64_t tick = 0;
  auto next_housekeeping = Clock::now() + options.housekeeping;
  while (!stop.load(std::memory_order_relaxed)) {
    const int max = batch_size(rt, options);
    if (max == 0) break;
    const int n = src.poll(max);
    if (n < 0) break;
    rt.packets.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
    ir.progress.iterations.fetch_add(1, std::memory_order_relaxed);
    if (n == 0) {
      // Event mode sleeps on the channel. Busy polling yields on an empty poll: free on a
      // dedicated core (nothing else is runnable), and it keeps a shared core usable.
      if (event_mode) {
        src.wait(wait_ms);
      } else {
        sched_yield();
      }
    }
    if (Clock::now() >= next_housekeeping) {
      next_housekeeping = Clock::now() + options.housekeeping;
      ir.ingest->set_tick(++tick);
      ir.ingest->flush_idle(tick - 2);
      refresh_drops(ir);
    }
  }
  if (!src.failed()) drain_verbs(rt, ir, options);
  if (src.failed()) {
    ir.progress.error = src.failure();
    ir.progress.failed.store(true, std::memory_order_release);
  }
  finish(ir);
}
#endif

}  // namespace

void capture_loop(Runtime& rt, InterfaceRuntime& ir, const std::atomic<bool>& stop,
                  const CaptureLoopOptions& options) noexcept {
#ifdef ROCECAP_HAVE_VERBS
  if (ir.verbs) return verbs_loop(rt, ir, stop, options);
#endif
  int64_t tick = 0;
  auto next_housekeeping = Clock::now() + options.housekeeping;
  const bool replay = rt.config->capture.backend == config::Backend::pcap_file;
  try {
    while (!stop.load(std::memory_order_relaxed)) {
      int max = batch_size(rt, options);
      if (max == 0) break;
      if (replay && (max = replay_room(ir, max)) == 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
        // Time spent waiting for the writer is not idleness of the streams.
        next_housekeeping = Clock::now() + options.housekeeping;
        continue;
      }
      const int n = dispatch(ir, max);
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
  auto next_unlink_check = Clock::now() + std::chrono::seconds(1);
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
    if (Clock::now() >= next_unlink_check) {  // files deleted under us: storage lost
      next_unlink_check = Clock::now() + std::chrono::seconds(1);
      for (const auto& ir : rt.interfaces)
        ir->writer->check_unlinked();
    }
    if (options.write_manifest && Clock::now() >= next_manifest) {
      next_manifest += options.manifest_interval;
      options.write_manifest();
    }
    if (n != 0) continue;
    if (all_done) break;
    std::this_thread::sleep_for(kWriterIdle);
  }
  for (const auto& ir : rt.interfaces) {
    (void)ir->writer->close();  // errors were reported
    publish_writer(*ir, unix_now_ns());
  }
}

}  // namespace rocecap::daemon
