// Per UDP flow with VTP (doc/vdif.md): what the packet sequence numbers say. `skipped` counts
// the numbers never seen: a number jumped over may still arrive late (reordered on the way), so
// it is only counted once it cannot be taken back any more. A user wants the packets the
// network lost; counting every jump (before issue 23) also counted every late packet.
#pragma once

#include <array>
#include <cstdint>
#include <limits>

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
  // Inline for the common case, the next number while the number it pushes out of the window
  // is not pending: nothing to count and no bit to change, so one compare pair and one store
  // (issue 30). Everything else, the first number included (settle_at_ is 0 until then), takes
  // the general rules.
  void note(uint64_t psn) noexcept {
    if (psn == expect_ && psn < settle_at_) [[likely]] {
      expect_ = psn + 1;
      return;
    }
    note_general(psn);
  }
  // note() without its inline step: the general rules, which give the same counts for the
  // next number too (tests compare the two, and both with a plain model of the rules).
  void note_general(uint64_t psn) noexcept;
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
  static constexpr uint64_t kNone = std::numeric_limits<uint64_t>::max();

  void advance(uint64_t psn) noexcept;
  void mark_late(uint64_t psn) noexcept;
  // The lowest pending number in [from, expect_), kNone if none; sets oldest_ and settle_at_.
  void find_oldest(uint64_t from) noexcept;

  bool started_ = false;
  uint64_t expect_ = 0;  // the highest number seen + 1
  // The oldest pending number + kWindow: the first next number whose slot still holds a
  // pending number (which then leaves the window as skipped). kNone with nothing pending; 0
  // before the first number, so that note() takes the general rules for it, and once the
  // highest is 2^64 - 1 (expect_ wrapped to 0), after which every number is late.
  uint64_t settle_at_ = 0;
  uint64_t oldest_ = kNone;  // the oldest pending number
  uint64_t pending_ = 0;
  // Bit n % kWindow: number n is pending (jumped over, not seen, not yet counted skipped), for
  // n in [expect_ - kWindow, expect_). A number seen, settled or before the first is clear.
  std::array<uint64_t, kWindow / 64> gap_{};
};

}  // namespace rocecap::capture
