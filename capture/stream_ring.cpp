#include "capture/stream_ring.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <stdexcept>
#include <string>

namespace rocecap::capture {
namespace {

std::size_t round_up(std::size_t n, std::size_t unit) {
  return (n + unit - 1) / unit * unit;
}

void check(const RingConfig& c) {
  auto bad = [](const std::string& field, const std::string& why) {
    throw std::invalid_argument("ring config: " + field + " " + why);
  };
  if (c.slots == 0 || c.slots > StreamRing::kMaxSlots)
    bad("slots", "must be 1.." + std::to_string(StreamRing::kMaxSlots));
  if (c.header_slot_bytes < 64) bad("header_slot_bytes", "must be at least 64");
  if (c.payload_slot_bytes == 0) bad("payload_slot_bytes", "must be positive");
  if (!std::has_single_bit(c.payload_align) || c.payload_align > (1u << 21))
    bad("payload_align", "must be a power of two up to 2 MiB");
}

const RingConfig& checked(const RingConfig& c) {
  check(c);
  return c;
}

std::unique_ptr<memory::PayloadMemory> host_payload(const RingConfig& c) {
  return std::make_unique<memory::HostMemory>(StreamRing::payload_bytes_needed(c), c.memory);
}

}  // namespace

std::size_t StreamRing::header_stride(const RingConfig& c) noexcept {
  return round_up(c.header_slot_bytes, kHeaderAlign);
}
std::size_t StreamRing::payload_stride(const RingConfig& c) noexcept {
  return round_up(c.payload_slot_bytes, c.payload_align);
}
std::size_t StreamRing::payload_bytes_needed(const RingConfig& c) noexcept {
  return payload_stride(c) * c.slots;
}

StreamRing::StreamRing(const RingConfig& config, std::unique_ptr<memory::PayloadMemory> payload)
    : slots_(checked(config).slots),
      header_stride_(header_stride(config)),
      payload_stride_(payload_stride(config)),
      header_mem_(std::make_unique<memory::HostMemory>(header_stride_ * slots_, config.memory)),
      payload_(payload ? std::move(payload) : host_payload(config)),
      header_base_(header_mem_->data()),
      payload_base_(payload_->data()),
      meta_(std::make_unique<SlotMeta[]>(slots_)),
      ready_(slots_),
      free_(slots_),
      stash_(std::make_unique<SlotId[]>(slots_)) {
  if (payload_->size() < payload_bytes_needed(config))
    throw std::invalid_argument("ring payload memory: " + std::to_string(payload_->size()) +
                                " bytes, needs " + std::to_string(payload_bytes_needed(config)));
  if (reinterpret_cast<std::uintptr_t>(payload_base_) % config.payload_align != 0)
    throw std::invalid_argument("ring payload memory: not aligned to payload_align");
  for (SlotId id = 0; id < slots_; ++id)
    free_.push(id);
}

std::optional<SlotId> StreamRing::acquire() noexcept {
  SlotId id;
  if (take_free(std::span<SlotId>(&id, 1)) == 1) return id;
  if (pinned_.load(std::memory_order_relaxed)) {
    prod_.dump_pinned_drops.add();
  } else if (consumer_pinned_.load(std::memory_order_relaxed)) {
    prod_.consumer_pinned_drops.add();
  } else {
    prod_.ring_full_drops.add();
  }
  return std::nullopt;
}

std::size_t StreamRing::take_free(std::span<SlotId> out) noexcept {
  std::size_t n = 0;
  while (n < out.size() && stash_size_ > 0)
    out[n++] = stash_[--stash_size_];
  n += free_.pop(out.subspan(n));
  prod_.taken.add(n);
  if (gens_ != nullptr && n > 0) bump_generations(out.first(n));
  return n;
}

// A sequence lock's writer side, for consumers (set_generations): the generation changes before
// anything new is written into the slot (the copy of the pcap path, or the NIC once the slot is
// posted), so a consumer that reads the old generation after reading the slot read old bytes.
// Only the producer writes generations; a plain load and store is enough.
void StreamRing::bump_generations(std::span<const SlotId> ids) noexcept {
  for (const SlotId id : ids)
    gens_[id].store(gens_[id].load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
}

void StreamRing::enable_loans() {
  if (payload_kind() != memory::MemoryKind::host)
    throw std::logic_error("ring: payload slots in GPU memory cannot be lent");
  if (!loans_) loans_ = std::make_unique<Loan[]>(slots_);
}

void StreamRing::take_home(std::span<const SlotId> ids) noexcept {
  if (!loans_) return;
  for (const SlotId id : ids) {
    const Loan& l = loans_[id];
    if (l.count == nullptr) continue;
    const std::size_t n = std::min<std::size_t>(meta_[id].payload_bytes, payload_stride_);
    std::memcpy(payload_base_ + std::size_t{id} * payload_stride_, l.bytes, n);
    end_loan(id);
  }
}

void StreamRing::give_back(SlotId id) noexcept {
  if (loans_) end_loan(id);
  // At most slots_ ids exist, so the stash cannot overflow while ids are used correctly.
  if (stash_size_ < slots_) stash_[stash_size_++] = id;
  prod_.returned.add();
  if (release_mask_) release_mask_->mark(release_index_);
}

std::size_t StreamRing::pop(std::span<SlotId> out) noexcept {
  const std::size_t n = ready_.pop(out);
  cons_.consumed.add(n);
  return n;
}

void StreamRing::release(std::span<const SlotId> ids) noexcept {
  // Before the ids go back: the producer may lend a slot again as soon as it is free.
  if (loans_) {
    for (const SlotId id : ids)
      end_loan(id);
  }
  free_.push(ids);  // cannot be full, as above
  cons_.released.add(ids.size());
  // After the push: whoever takes the mark finds the ids (release_mask.hpp).
  if (release_mask_ && !ids.empty()) release_mask_->mark(release_index_);
}

uint32_t StreamRing::free_slots() const noexcept {
  // Reading the consumer's counter last errs towards fewer free slots.
  const uint64_t held = prod_.taken.get() - prod_.returned.get();
  const uint64_t in_use = held - cons_.released.get();
  return static_cast<uint32_t>(slots_ - in_use);
}

RingStats StreamRing::stats() const noexcept {
  RingStats s{prod_.taken.get(),           prod_.published.get(), prod_.returned.get(),
              prod_.ring_full_drops.get(), cons_.consumed.get(),  cons_.released.get()};
  s.dump_pinned_drops = prod_.dump_pinned_drops.get();
  s.consumer_pinned_drops = prod_.consumer_pinned_drops.get();
  return s;
}

}  // namespace rocecap::capture
