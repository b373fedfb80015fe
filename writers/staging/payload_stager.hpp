// PayloadStager: brings payload slots the CPU must not read (GPU memory) into host memory
// before the writers see them, and hands each writer its frame's staged payload.
//
// The writer thread gives it the slots it took in one pass, in the order it will write them.
// The stager cuts that list into batches that fit one staging buffer, and keeps two buffers:
// the copy of batch N+1 runs while the sink writes batch N. Within a batch, a run of
// consecutive slot ids of one ring with equal payload sizes is one 2D copy (source pitch: the
// payload slot stride; destination pitch: the payload size, so frames land packed); a wrap of
// the ring, a change of ring or of size starts a new run. The sink sees an item only after the
// fence of its batch completed, and stage() returns only when every batch did: the caller may
// release the slots when it returns, and not before.
//
// No allocation after construction; per batch one clock read and the engine's calls, no
// locks. Counters are plain integers of the writer thread (StagingStats).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "capture/stream_ring.hpp"
#include "writers/staging/copy_engine.hpp"

namespace rocecap::writers::staging {

// One slot to stage, and the caller's tag for it (which writer it is for).
struct StageItem {
  const capture::StreamRing* ring = nullptr;
  capture::SlotId slot = 0;
  uint32_t tag = 0;
};

struct StagingOptions {
  // Bytes of each of the two staging buffers; raised to the largest payload slot if smaller.
  std::size_t buffer_bytes = std::size_t{4} << 20;
  // Call the engine's GPUDirect flush once per pass, before its copies are queued.
  bool flush_gpudirect = true;
  // The CUDA device whose memory the rings use (the engine binds it); -1: the current one.
  int cuda_device = -1;
};

struct StagingStats {
  uint64_t bytes_copied = 0;   // payload bytes copied out of the payload slabs, completed
  uint64_t frames_staged = 0;  // items whose staged copy completed
  uint64_t copies = 0;         // 2D copies queued (one per run of consecutive slots)
  uint64_t batches = 0;        // fenced batches (one staging buffer each)
  // Staging lag of a frame: from the start of the pass that took its slot to the completion
  // of its batch's copy. Summed over frames (mean = lag_ns_total / frames_staged) and the
  // largest seen.
  uint64_t lag_ns_total = 0;
  uint64_t lag_ns_max = 0;
  uint64_t frames_failed = 0;  // items whose copy failed: handed to the sink with ok = false
  uint64_t copy_errors = 0;    // failed engine calls
};

class PayloadStager {
 public:
  // `max_payload_bytes`: the largest payload slot stride of the rings it will see.
  // Allocates both staging buffers; throws std::runtime_error when the engine cannot, and
  // std::invalid_argument for an engine with fewer than two lanes.
  PayloadStager(std::unique_ptr<CopyEngine> engine, std::size_t max_payload_bytes,
                const StagingOptions& options = {});

  // Stages the payload of every item and calls sink(item, payload, ok) for each, in order,
  // once its copy completed (`payload`: meta(slot).payload_bytes bytes of staged memory, valid
  // during the call only). ok = false: the copy failed and `payload` is empty.
  template <class Sink>
  void stage(std::span<const StageItem> items, Sink&& sink);

  const StagingStats& stats() const noexcept { return stats_; }
  CopyEngine& engine() noexcept { return *engine_; }
  const CopyEngine& engine() const noexcept { return *engine_; }
  std::size_t buffer_bytes() const noexcept { return buffer_bytes_; }

 private:
  struct Placed {
    std::size_t offset = 0;
    std::size_t bytes = 0;
  };
  struct Lane {
    PinnedBuffer buffer;
    std::vector<Placed> placed;  // of the items of the batch queued on this lane
    std::size_t count = 0;
    bool ok = true;
  };

  void begin_pass() noexcept;
  // Queues items[from, end) on `lane`, as many as fit its buffer; returns `end` (> from).
  std::size_t queue_batch(unsigned lane, std::span<const StageItem> items, std::size_t from);
  // Waits for `lane`'s batch; counts it. True when its copies completed.
  bool complete_batch(unsigned lane) noexcept;
  bool queue_run(unsigned lane, const Copy2D& run) noexcept;
  std::span<const std::byte> staged(unsigned lane, std::size_t k) const noexcept;

  std::unique_ptr<CopyEngine> engine_;
  std::size_t buffer_bytes_;
  StagingOptions options_;
  Lane lanes_[2];
  int64_t pass_start_ns_ = 0;
  StagingStats stats_;
};

template <class Sink>
void PayloadStager::stage(std::span<const StageItem> items, Sink&& sink) {
  if (items.empty()) return;
  begin_pass();
  unsigned lane = 0;
  std::size_t delivered = 0;
  std::size_t queued = queue_batch(lane, items, 0);
  while (delivered < items.size()) {
    const std::size_t end = queued;
    // Double buffering: the next batch is queued before this one is waited for.
    if (queued < items.size()) queued = queue_batch(lane ^ 1u, items, queued);
    const bool ok = complete_batch(lane);
    for (std::size_t i = delivered; i < end; ++i) {
      sink(items[i], ok ? staged(lane, i - delivered) : std::span<const std::byte>{}, ok);
    }
    delivered = end;
    lane ^= 1u;
  }
}

}  // namespace rocecap::writers::staging
