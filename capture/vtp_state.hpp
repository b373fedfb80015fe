// Per UDP flow with VTP (doc/vdif.md): what the packet sequence numbers say. `skipped` counts
// the numbers never seen: a number jumped over may still arrive late (reordered on the way), so
// it is only counted once it cannot be taken back any more. A user wants the packets the
// network lost; counting every jump (before issue 23) also counted every late packet.
#pragma once

#include <array>
#include <cstdint>

#include "common/relaxed_counter.hpp"

namespace rocecap::capture {

class VtpState {
 public:
  // How far behind the highest number a late packet still takes its number back: far beyond
  // any reordering on a network (the sequencer drops frames later than its reorder window, at
  // most 1024 frames, anyway). 512 bytes of bits per flow.
  static constexpr uint64_t kWindow = 4096;

  // Capture thread. Notes one packet's number: a jump forward leaves numbers pending, a late
  // number within the window takes its own back, a number at or below the highest is counted
  // out_of_order (late or repeated).
  void note(uint64_t psn) noexcept;
  // Capture thread: the flow went quiet, or the run stops. Every pending number counts as
  // skipped; a packet arriving later is out of order only.
  void settle() noexcept;
  // Numbers jumped over that may still arrive (not yet in `skipped`).
  uint64_t pending() const noexcept { return pending_; }

  // Published (any thread reads): numbers never seen, counted once settled, so the counter
  // never goes back; and packets at or below the highest number seen (late or repeated).
  common::RelaxedCounter skipped;
  common::RelaxedCounter out_of_order;

 private:
  void advance(uint64_t psn) noexcept;
  void mark_late(uint64_t psn) noexcept;

  bool started_ = false;
  uint64_t highest_ = 0;
  uint64_t pending_ = 0;
  // Bit n % kWindow: number n was seen, for n in (highest_ - kWindow, highest_]. Numbers
  // before the first one are taken as seen.
  std::array<uint64_t, kWindow / 64> seen_{};
};

}  // namespace rocecap::capture
