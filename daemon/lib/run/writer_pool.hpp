// The writer pool (issue 12): output.writer_threads threads, each owning a fixed set of
// shards (some streams of one interface's CaptureWriter; an interface with pcap output or GPU
// staging is one shard), so every ring keeps exactly one consumer and every writer object is
// touched by one thread. With one thread this is writer_loop (loops.hpp) unchanged.
//
// Shared state between the threads is limited to what needs no per-packet synchronisation:
// - metrics: each shard publishes its own counters (PublishedStats::shards), summed at scrape;
// - the manifest: written by thread 0 while the other threads wait at a pass boundary (a pause
//   every manifest interval; the writers' plain stats and file lists are then quiescent);
// - rotation requests: thread 0 takes the flag and bumps a generation every thread follows;
// - write errors: reported through the CaptureWriter's reporter, which locks (errors are rare).
#pragma once

#include <atomic>
#include <cstddef>
#include <optional>
#include <vector>

#include "daemon/lib/run/writer_loop.hpp"
#include "writers/capture_writer.hpp"

namespace rocecap::daemon {

struct PoolShard {
  InterfaceRuntime* ir = nullptr;
  writers::WriterShard part;
  std::size_t slot = 0;  // index into ir->published.shards
};

// Threads' shares: plan[t] is what thread t polls.
using WriterPlan = std::vector<std::vector<PoolShard>>;

// The default output.writer_threads: one thread per target (output directory) or per 8 streams,
// whichever is more, at most one per shard and at most half the CPUs (the other half captures),
// at least 1.
unsigned default_writer_threads(std::size_t shards, std::size_t streams, std::size_t targets,
                                unsigned cpus) noexcept;

// Splits every interface into shards (whole when it cannot be split) and deals them to
// `threads` threads, balancing the number of streams per thread; sizes ir->published.shards.
// Called before any thread starts.
WriterPlan plan_writer_pool(Runtime& rt, unsigned threads);

// Runs the pool to the end (all capture done, rings drained, files closed); `cpus[t]` pins
// thread t (empty: not pinned). Returns after joining every thread.
void run_writer_pool(Runtime& rt, const WriterPlan& plan, std::atomic<bool>& rotate,
                     const WriterLoopOptions& options, const std::vector<unsigned>& cpus,
                     spdlog::logger& log);

}  // namespace rocecap::daemon
