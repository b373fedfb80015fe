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
  // Inline for the common case, the next number: one bit, where advance() loops and counts.
  void note(uint64_t psn) noexcept {
    if (started_ && psn == highest_ + 1) [[likely]]
      return next(psn);
    note_other(psn);
  }
  // note() without its inline step for the next number: the rules it must agree with (tests
  // compare the two).
  void note_general(uint64_t psn) noexcept { note_other(psn); }
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
  void note_other(uint64_t psn) noexcept;
  // advance() for a jump of one: the number's slot held psn - kWindow, which leaves the window
  // (as skipped, were it never seen); psn itself is seen, so nothing new is pending.
  void next(uint64_t psn) noexcept {
    uint64_t& word = seen_[(psn % kWindow) / 64];
    const uint64_t bit = uint64_t{1} << (psn % 64);
    if ((word & bit) == 0) [[unlikely]] {
      skipped.add();
      --pending_;
    }
    word |= bit;
    highest_ = psn;
  }
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
