// Retention: the last `keep` frames of one stream stay in its ring after they were written, so
// that a trigger can still dump them (doc/dumps.md).
//
// The writer thread hands every slot it has finished with to retain() instead of releasing it.
// The slots are kept in a FIFO in the order the sequencer delivered them (time order within a
// segment); once more than `keep` are held the oldest go back to the ring's free queue. A slot
// whose payload a zero-copy source lent (a kernel ring block, capture/packet/) has it copied into
// its own payload slot first and its loan ended (StreamRing::take_home): retention holds slots
// for seconds, the kernel ring covers about 2 s of blocks, and held blocks stop capture.
// Positions in the FIFO are absolute (0, 1, 2, ... since the start), so a dump names the frames
// it reads by position and a position never changes meaning.
//
// Pins. A dump pins the position it reads next: no slot at or after a pin is released, even
// when that holds more than `keep` slots; the ring was sized with headroom for that
// (retention.pin_headroom). While pins hold slots beyond `keep`, the ring is marked pinned, so
// a packet that finds no free slot meanwhile is counted as dump_pinned, not ring_full
// (StreamRing::acquire): the dump's cost is visible, never silent.
//
// Threads: retain() on the writer thread (the ring's consumer); pin/move_pin/unpin/span/at on
// any thread (the dump thread). One mutex, taken once per writer pass and per dump step, never
// per packet on the capture thread.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>

#include "capture/stream_ring.hpp"

namespace rocecap::capture {

struct RetentionStats {
  uint64_t keep = 0;            // frames retention keeps
  uint64_t held = 0;            // slots held now (retained + held beyond keep by pins)
  uint64_t pinned_extra = 0;    // of those, held beyond keep because a dump pins them
  uint64_t pins = 0;            // pins in use
  uint64_t retained_total = 0;  // slots ever handed to retain()
};

class Retention {
 public:
  static constexpr std::size_t kMaxPins = 32;
  static constexpr uint64_t kNoPin = UINT64_MAX;

  // keep: frames kept (1 to ring.slots() - 1). Allocates the FIFO (ring.slots() ids).
  Retention(StreamRing& ring, uint32_t keep);
  Retention(const Retention&) = delete;
  Retention& operator=(const Retention&) = delete;

  // Writer thread: the slots it has written this pass, in the order written.
  void retain(std::span<const SlotId> ids) noexcept;

  // Positions [head, tail) held now; tail - 1 is the newest.
  struct Range {
    uint64_t head = 0, tail = 0;
  };
  Range range() const;

  // Pins position `from` (raised to the oldest held): returns the pin and the position it holds,
  // or nullopt when kMaxPins pins are in use.
  std::optional<std::size_t> pin(uint64_t from, uint64_t& pinned);
  // A hold-mode consumer's pin (doc/consumers.md): like pin(), but bounded: once the pin
  // holds more than `max_frames` positions (tail - pinned), retain() drops it on the writer
  // thread, so the bound holds at every pass, and detached(pin) says so until unpin().
  // While consumer pins hold slots beyond keep, ring-full drops count as consumer_pinned.
  std::optional<std::size_t> hold(uint64_t from, uint64_t max_frames, uint64_t& pinned);
  bool detached(std::size_t pin) const;
  // Moves a pin forward (never back: what it let go may be gone).
  void move_pin(std::size_t pin, uint64_t to);
  // The position a pin holds (kNoPin: none, or dropped for its bound).
  uint64_t pinned_at(std::size_t pin) const;
  void unpin(std::size_t pin);

  // The slot at `pos`; valid while head <= pos < tail and a pin at or before pos is held.
  SlotId at(uint64_t pos) const noexcept { return entries_[pos % capacity_]; }
  const StreamRing& ring() const noexcept { return ring_; }
  uint32_t keep() const noexcept { return keep_; }

  RetentionStats stats() const;

 private:
  uint64_t lowest_pin() const noexcept;  // under mu_
  void enforce_bounds() noexcept;        // under mu_
  std::optional<std::size_t> add_pin(uint64_t from, uint64_t bound, uint64_t& pinned);

  StreamRing& ring_;
  const uint32_t keep_;
  const uint32_t capacity_;
  std::unique_ptr<SlotId[]> entries_;
  std::unique_ptr<SlotId[]> releasing_;  // writer scratch: ids released in one retain()
  mutable std::mutex mu_;
  uint64_t head_ = 0, tail_ = 0;
  uint64_t retained_total_ = 0;
  std::array<uint64_t, kMaxPins> pins_;
  std::array<uint64_t, kMaxPins> bounds_{};  // 0: a dump's pin, unbounded
  std::array<bool, kMaxPins> detached_{};
};

}  // namespace rocecap::capture
