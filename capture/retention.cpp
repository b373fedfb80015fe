#include "capture/retention.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace rocecap::capture {

Retention::Retention(StreamRing& ring, uint32_t keep)
    : ring_(ring),
      keep_(keep),
      capacity_(ring.slots()),
      entries_(std::make_unique<SlotId[]>(ring.slots())),
      releasing_(std::make_unique<SlotId[]>(ring.slots())) {
  if (keep == 0 || keep >= ring.slots()) {  // 0 would make a pin-free FIFO of nothing
    throw std::invalid_argument("retention: keeps " + std::to_string(keep) +
                                " frames, needs 1 to ring slots - 1 (" +
                                std::to_string(ring.slots()) + " slots)");
  }
  pins_.fill(kNoPin);
}

uint64_t Retention::lowest_pin() const noexcept {
  return *std::min_element(pins_.begin(), pins_.end());
}

void Retention::retain(std::span<const SlotId> ids) noexcept {
  // Retained slots are held for seconds, far beyond the lending bound: lent ones give their
  // kernel blocks back now (StreamRing::take_home), before a dump can see them.
  ring_.take_home(ids);
  std::size_t n = 0;
  {
    std::lock_guard lock(mu_);
    // Each slot id is held at most once, so the FIFO (one entry per slot) never overflows.
    for (SlotId id : ids)
      entries_[tail_++ % capacity_] = id;
    retained_total_ += ids.size();
    enforce_bounds();
    const uint64_t pin = lowest_pin();
    while (tail_ - head_ > keep_ && head_ < pin)
      releasing_[n++] = entries_[head_++ % capacity_];
    // Who holds the slots beyond keep: the lowest pin's owner.
    const bool beyond = tail_ - head_ > keep_;
    bool consumer = false;
    for (std::size_t i = 0; i < kMaxPins; ++i)
      consumer = consumer || (pins_[i] == pin && bounds_[i] != 0);
    ring_.set_pinned(beyond && !consumer);
    ring_.set_consumer_pinned(beyond && consumer);
  }
  ring_.release(std::span<const SlotId>(releasing_.get(), n));
}

Retention::Range Retention::range() const {
  std::lock_guard lock(mu_);
  return {head_, tail_};
}

void Retention::enforce_bounds() noexcept {
  for (std::size_t i = 0; i < kMaxPins; ++i) {
    if (pins_[i] == kNoPin || bounds_[i] == 0 || tail_ - pins_[i] <= bounds_[i]) continue;
    pins_[i] = kNoPin;
    detached_[i] = true;
  }
}

std::optional<std::size_t> Retention::add_pin(uint64_t from, uint64_t bound, uint64_t& pinned) {
  std::lock_guard lock(mu_);
  for (std::size_t i = 0; i < kMaxPins; ++i) {
    if (pins_[i] != kNoPin || detached_[i]) continue;
    pins_[i] = pinned = std::max(from, head_);
    bounds_[i] = bound;
    return i;
  }
  return std::nullopt;
}

std::optional<std::size_t> Retention::pin(uint64_t from, uint64_t& pinned) {
  return add_pin(from, 0, pinned);
}

std::optional<std::size_t> Retention::hold(uint64_t from, uint64_t max_frames, uint64_t& pinned) {
  return add_pin(from, std::max<uint64_t>(max_frames, 1), pinned);
}

bool Retention::detached(std::size_t pin) const {
  std::lock_guard lock(mu_);
  return pin < kMaxPins && detached_[pin];
}

uint64_t Retention::pinned_at(std::size_t pin) const {
  std::lock_guard lock(mu_);
  return pin < kMaxPins ? pins_[pin] : kNoPin;
}

void Retention::move_pin(std::size_t pin, uint64_t to) {
  std::lock_guard lock(mu_);
  if (pin < kMaxPins && pins_[pin] != kNoPin) pins_[pin] = std::max(pins_[pin], to);
}

void Retention::unpin(std::size_t pin) {
  std::lock_guard lock(mu_);
  if (pin >= kMaxPins) return;
  pins_[pin] = kNoPin;
  bounds_[pin] = 0;
  detached_[pin] = false;
}

RetentionStats Retention::stats() const {
  std::lock_guard lock(mu_);
  RetentionStats s;
  s.keep = keep_;
  s.held = tail_ - head_;
  s.pinned_extra = s.held > keep_ ? s.held - keep_ : 0;
  s.pins = static_cast<uint64_t>(
      std::count_if(pins_.begin(), pins_.end(), [](uint64_t p) { return p != kNoPin; }));
  s.retained_total = retained_total_;
  return s;
}

}  // namespace rocecap::capture
