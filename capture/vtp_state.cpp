#include "capture/vtp_state.hpp"

#include <bit>

namespace rocecap::capture {
namespace {

constexpr uint64_t kAll = ~uint64_t{0};

}  // namespace

void VtpState::note_other(uint64_t psn) noexcept {
  if (!started_) {
    started_ = true;
    highest_ = psn;
    seen_.fill(kAll);
    return;
  }
  if (psn > highest_) return advance(psn);
  out_of_order.add();
  mark_late(psn);
}

// Slots highest_+1 .. psn held the numbers kWindow below them: those not seen leave the
// window as skipped; the new numbers start unseen, all but psn itself pending. O(jump / 64).
void VtpState::advance(uint64_t psn) noexcept {
  const uint64_t jump = psn - highest_;
  if (jump >= kWindow) {
    // The whole window leaves, and the numbers of the jump that never enter it with it.
    skipped.add(pending_ + (jump - kWindow));
    seen_.fill(0);
    pending_ = kWindow;
  } else {
    uint64_t left = 0;
    for (uint64_t slot = (highest_ + 1) % kWindow, n = jump; n != 0;) {
      const uint64_t bit = slot % 64, take = n < 64 - bit ? n : 64 - bit;
      const uint64_t mask = (take == 64 ? kAll : ((uint64_t{1} << take) - 1)) << bit;
      left += static_cast<uint64_t>(std::popcount(~seen_[slot / 64] & mask));
      seen_[slot / 64] &= ~mask;
      slot = (slot + take) % kWindow;
      n -= take;
    }
    if (left != 0) skipped.add(left);
    pending_ += jump - left;
  }
  highest_ = psn;
  seen_[(psn % kWindow) / 64] |= uint64_t{1} << (psn % 64);
  --pending_;
}

// A number at or below the highest: taken back when it was pending, else a repeat (or too
// late to tell: it was counted skipped already).
void VtpState::mark_late(uint64_t psn) noexcept {
  if (highest_ - psn >= kWindow) return;
  uint64_t& word = seen_[(psn % kWindow) / 64];
  const uint64_t bit = uint64_t{1} << (psn % 64);
  if ((word & bit) != 0) return;
  word |= bit;
  --pending_;
}

void VtpState::settle() noexcept {
  if (pending_ == 0) return;
  skipped.add(pending_);
  pending_ = 0;
  seen_.fill(kAll);
}

}  // namespace rocecap::capture
