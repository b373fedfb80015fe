#include "writers/staging/payload_stager.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace rocecap::writers::staging {
namespace {

// Items of one batch at most, whatever their size (zero-byte payloads take no buffer space).
constexpr std::size_t kMaxBatchItems = 16384;

int64_t steady_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::size_t payload_bytes(const StageItem& it) noexcept {
  return std::min<std::size_t>(it.ring->meta(it.slot).payload_bytes, it.ring->payload_stride());
}

// Whether `it` extends the run that starts at `first` and holds `rows` rows of `width`.
// Consecutive slots are one 2D copy only where their payloads are where the stride puts them:
// a slot lent by a zero-copy source (StreamRing::lend, capture/packet/) has its payload in the
// kernel's ring block, not in the slab, and a run taken from the slab would copy the slab's
// stale bytes for it (a triggered dump of packet_ring's lent frames read zeros).
bool continues(const StageItem& first, std::size_t rows, std::size_t width,
               const StageItem& it) noexcept {
  return it.ring == first.ring && std::size_t{it.slot} == std::size_t{first.slot} + rows &&
         payload_bytes(it) == width &&
         it.ring->payload(it.slot).data() ==
             first.ring->payload(first.slot).data() + rows * first.ring->payload_stride();
}

}  // namespace

PayloadStager::PayloadStager(std::unique_ptr<CopyEngine> engine, std::size_t max_payload_bytes,
                             const StagingOptions& options)
    : engine_(std::move(engine)),
      buffer_bytes_(std::max({options.buffer_bytes, max_payload_bytes, std::size_t{1}})),
      options_(options) {
  if (!engine_ || engine_->lanes() < 2) {
    throw std::invalid_argument("payload stager: the copy engine needs two lanes");
  }
  for (Lane& l : lanes_) {
    l.buffer = engine_->allocate_pinned(buffer_bytes_);
    l.placed.resize(kMaxBatchItems);
  }
}

void PayloadStager::begin_pass() noexcept {
  pass_start_ns_ = steady_ns();
  if (options_.flush_gpudirect && !engine_->flush_gpudirect_writes()) ++stats_.copy_errors;
}

bool PayloadStager::queue_run(unsigned lane, const Copy2D& run) noexcept {
  if (run.rows == 0 || run.width == 0) return true;
  ++stats_.copies;
  if (engine_->copy_2d(lane, run)) return true;
  ++stats_.copy_errors;
  return false;
}

std::size_t PayloadStager::queue_batch(unsigned lane, std::span<const StageItem> items,
                                       std::size_t from) {
  Lane& l = lanes_[lane];
  l.ok = true;
  std::size_t used = 0;
  std::size_t i = from;
  Copy2D run;
  const StageItem* run_first = nullptr;
  for (; i < items.size() && i - from < kMaxBatchItems; ++i) {
    const StageItem& it = items[i];
    const std::size_t bytes = payload_bytes(it);
    if (used + bytes > buffer_bytes_) break;  // the constructor made one slot always fit
    if (run_first == nullptr || !continues(*run_first, run.rows, run.width, it)) {
      l.ok = queue_run(lane, run) && l.ok;
      run_first = &it;
      run = Copy2D{l.buffer.data() + used,    bytes, it.ring->payload(it.slot).data(),
                   it.ring->payload_stride(), bytes, 0};
    }
    ++run.rows;
    l.placed[i - from] = Placed{used, bytes};
    used += bytes;
  }
  l.ok = queue_run(lane, run) && l.ok;
  if (!engine_->record_fence(lane)) {
    ++stats_.copy_errors;
    l.ok = false;
  }
  l.count = i - from;
  return i;
}

bool PayloadStager::complete_batch(unsigned lane) noexcept {
  Lane& l = lanes_[lane];
  if (!engine_->wait_fence(lane)) {
    ++stats_.copy_errors;
    l.ok = false;
  }
  ++stats_.batches;
  if (!l.ok) {
    stats_.frames_failed += l.count;
    return false;
  }
  const uint64_t lag = static_cast<uint64_t>(std::max<int64_t>(0, steady_ns() - pass_start_ns_));
  stats_.frames_staged += l.count;
  stats_.lag_ns_total += lag * l.count;
  stats_.lag_ns_max = std::max(stats_.lag_ns_max, lag);
  for (std::size_t k = 0; k < l.count; ++k)
    stats_.bytes_copied += l.placed[k].bytes;
  return true;
}

std::span<const std::byte> PayloadStager::staged(unsigned lane, std::size_t k) const noexcept {
  const Lane& l = lanes_[lane];
  return {l.buffer.data() + l.placed[k].offset, l.placed[k].bytes};
}

}  // namespace rocecap::writers::staging
