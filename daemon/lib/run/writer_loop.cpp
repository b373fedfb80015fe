#include "daemon/lib/run/writer_loop.hpp"

#include <thread>

#include "daemon/lib/reporting/report.hpp"

namespace rocecap::daemon {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

void writer_loop(Runtime& rt, std::atomic<bool>& rotate,
                 const WriterLoopOptions& options) noexcept {
  auto next_manifest = Clock::now() + options.manifest_interval;
  auto next_unlink_check = Clock::now() + std::chrono::seconds(1);
  auto next_flush = Clock::now() + writers::kFlushInterval;
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
        ir->writer->check_storage();
    }
    if (Clock::now() >= next_flush) {  // buffered bytes to the kernel: what a kill may cost
      next_flush = Clock::now() + writers::kFlushInterval;
      for (const auto& ir : rt.interfaces)
        ir->writer->flush();
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
