#include "daemon/lib/run/writer_pool.hpp"

#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "daemon/lib/reporting/published.hpp"

namespace rocecap::daemon {
namespace {

using Clock = std::chrono::steady_clock;

int64_t wall_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Thread 0 parks the others at a pass boundary to write the manifest, which reads every
// writer's plain stats and file list. Outside that, no thread waits for another.
class PassBarrier {
 public:
  explicit PassBarrier(unsigned others) : running_(others) {}

  // Thread 0: waits until every other thread still running is parked, runs `f`, releases them.
  template <typename F>
  void with_others_parked(F&& f) {
    std::unique_lock lock(mutex_);
    requested_.store(true, std::memory_order_release);
    cv_.wait(lock, [&] { return parked_ == running_; });
    f();
    requested_.store(false, std::memory_order_release);
    ++generation_;
    cv_.notify_all();
  }

  // Other threads, between passes: one relaxed load unless thread 0 is asking.
  void checkpoint() {
    if (!requested_.load(std::memory_order_acquire)) return;
    std::unique_lock lock(mutex_);
    if (!requested_.load(std::memory_order_relaxed)) return;
    const uint64_t generation = generation_;
    ++parked_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return generation_ != generation; });
    --parked_;
  }

  // A thread that has closed its files and leaves for good.
  void leave() {
    std::lock_guard lock(mutex_);
    --running_;
    cv_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::atomic<bool> requested_{false};
  unsigned running_;
  unsigned parked_ = 0;
  uint64_t generation_ = 0;
};

struct PoolShared {
  PassBarrier barrier;
  std::atomic<uint64_t> rotation{0};  // generation; thread 0 bumps it on a rotation request
};

bool all_capture_done(const Runtime& rt) {
  for (const auto& ir : rt.interfaces) {
    if (!ir->progress.done.load(std::memory_order_acquire)) return false;
  }
  return true;
}

// One pool thread: writer_loop's pass over its own shards.
void pool_thread(Runtime& rt, const std::vector<PoolShard>& shards, std::size_t index,
                 PoolShared& shared, std::atomic<bool>& rotate,
                 const WriterLoopOptions& options) noexcept {
  WriterThreadCounters& mine = rt.writer_threads[index];
  auto next_manifest = Clock::now() + options.manifest_interval;
  auto next_unlink_check = Clock::now() + std::chrono::seconds(1);
  auto next_flush = Clock::now() + writers::kFlushInterval;
  uint64_t rotation_seen = 0;
  for (;;) {
    // Read before draining: what a finished loop published is then seen by this pass.
    const bool all_done = all_capture_done(rt);
    const auto t0 = Clock::now();
    std::size_t n = 0;
    const int64_t now = wall_ns();
    for (const PoolShard& s : shards) {
      n += s.ir->writer->poll(s.part);
      publish_shard(*s.ir, s.part, s.slot, now);
    }
    mine.passes.add();
    mine.slots.add(n);
    if (n != 0) mine.busy_ns.add(static_cast<uint64_t>((Clock::now() - t0).count()));
    if (index == 0 && rotate.exchange(false)) shared.rotation.fetch_add(1);
    if (const uint64_t r = shared.rotation.load(); r != rotation_seen) {
      rotation_seen = r;
      for (const PoolShard& s : shards)
        s.ir->writer->request_rotation(s.part);
    }
    if (Clock::now() >= next_unlink_check) {  // files deleted under us: storage lost
      next_unlink_check = Clock::now() + std::chrono::seconds(1);
      for (const PoolShard& s : shards)
        s.ir->writer->check_storage(s.part);
    }
    if (Clock::now() >= next_flush) {  // buffered bytes to the kernel: what a kill may cost
      next_flush = Clock::now() + writers::kFlushInterval;
      for (const PoolShard& s : shards)
        s.ir->writer->flush(s.part);
    }
    if (index == 0) {
      if (options.write_manifest && Clock::now() >= next_manifest) {
        next_manifest += options.manifest_interval;
        shared.barrier.with_others_parked(options.write_manifest);
      }
    } else {
      shared.barrier.checkpoint();
    }
    if (n != 0) continue;
    if (all_done) break;
    std::this_thread::sleep_for(kWriterIdle);
  }
  for (const PoolShard& s : shards) {
    (void)s.ir->writer->close(s.part);  // errors were reported
    publish_shard(*s.ir, s.part, s.slot, wall_ns());
  }
  if (index != 0) shared.barrier.leave();
}

}  // namespace

unsigned default_writer_threads(std::size_t shards, std::size_t streams, std::size_t targets,
                                unsigned cpus) noexcept {
  const std::size_t wanted = std::max<std::size_t>(targets, (streams + 7) / 8);
  const std::size_t cap = std::min<std::size_t>(shards, std::max<unsigned>(1, cpus / 2));
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min(wanted, cap)));
}

WriterPlan plan_writer_pool(Runtime& rt, unsigned threads) {
  threads = std::max(1u, threads);
  // Units: one per stream of a splittable interface, one per other interface (weighted by its
  // streams); the heaviest first, each to the thread with the fewest streams so far.
  struct Unit {
    InterfaceRuntime* ir;
    std::vector<std::size_t> streams;
    bool pcap;
  };
  std::vector<Unit> units;
  for (const auto& ir : rt.interfaces) {
    writers::CaptureWriter& w = *ir->writer;
    if (w.splittable() && threads > 1) {
      for (std::size_t s = 0; s < w.streams(); ++s)
        units.push_back({ir.get(), {s}, false});
    } else {
      units.push_back({ir.get(), w.whole().streams, w.whole().pcap});
    }
  }
  std::stable_sort(units.begin(), units.end(), [](const Unit& a, const Unit& b) {
    return a.streams.size() > b.streams.size();
  });
  threads =
      static_cast<unsigned>(std::min<std::size_t>(threads, std::max<std::size_t>(1, units.size())));
  WriterPlan plan(threads);
  std::vector<std::size_t> load(threads, 0);
  for (Unit& u : units) {
    const auto t =
        static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[t] += std::max<std::size_t>(1, u.streams.size());
    // One shard per interface per thread: units of the same interface merge.
    auto same = std::find_if(plan[t].begin(), plan[t].end(),
                             [&](const PoolShard& s) { return s.ir == u.ir; });
    if (same == plan[t].end()) {
      plan[t].push_back({u.ir, {std::move(u.streams), u.pcap}, 0});
    } else {
      same->part.streams.insert(same->part.streams.end(), u.streams.begin(), u.streams.end());
      same->part.pcap = same->part.pcap || u.pcap;
    }
  }
  for (auto& ir : rt.interfaces) {
    std::size_t slots = 0;
    for (auto& thread : plan) {
      for (PoolShard& s : thread) {
        if (s.ir != ir.get()) continue;
        std::sort(s.part.streams.begin(), s.part.streams.end());
        s.slot = slots++;
      }
    }
    prepare_shards(*ir, slots);
  }
  rt.writer_threads = std::make_unique<WriterThreadCounters[]>(plan.size());
  rt.writer_thread_count = plan.size();
  return plan;
}

void run_writer_pool(Runtime& rt, const WriterPlan& plan, std::atomic<bool>& rotate,
                     const WriterLoopOptions& options, const std::vector<unsigned>& cpus,
                     spdlog::logger& log) {
  PoolShared shared{PassBarrier(static_cast<unsigned>(plan.size()) - 1), {}};
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < plan.size(); ++t) {
    threads.emplace_back([&, t] {
      // Named threads: visible in top -H, ps -L and /proc/<pid>/task/*/comm.
      pthread_setname_np(pthread_self(), ("rc-writer-" + std::to_string(t)).c_str());
      std::string why;
      if (t < cpus.size() && !pin_to_cpu(cpus[t], why))
        log.warn("writer thread {}: cannot pin to CPU {}: {}", t, cpus[t], why);
      pool_thread(rt, plan[t], t, shared, rotate, options);
    });
  }
  for (auto& th : threads)
    th.join();
}

}  // namespace rocecap::daemon
