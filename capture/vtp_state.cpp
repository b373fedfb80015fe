#include "capture/vtp_state.hpp"

#include <bit>

namespace rocecap::capture {
namespace {

constexpr uint64_t kAll = ~uint64_t{0};
constexpr uint64_t kMax = ~uint64_t{0};

// settle_at_ for the oldest pending number `oldest` (kMax: none). Saturated: a number within
// kWindow of 2^64 never settles by the step. 0 once the highest number is 2^64 - 1 (`expect`
// wrapped to 0): no number is next after it, every one is late, as before issue 30's step.
uint64_t step_bound(uint64_t expect, uint64_t oldest) noexcept {
  if (expect == 0) return 0;
  if (oldest == kMax || oldest > kMax - VtpState::kWindow) return kMax;
  return oldest + VtpState::kWindow;
}

}  // namespace

void VtpState::note_general(uint64_t psn) noexcept {
  if (!started_) {
    started_ = true;
    expect_ = psn + 1;
    settle_at_ = step_bound(expect_, kNone);
    return;
  }
  if (psn >= expect_ && expect_ != 0) return advance(psn);
  out_of_order.add();
  mark_late(psn);
}

// Slots expect_ .. psn held the numbers kWindow below them: those still pending leave the
// window as skipped; the new numbers start pending, all but psn itself. O(jump / 64).
void VtpState::advance(uint64_t psn) noexcept {
  const uint64_t jump = psn - expect_ + 1;  // from the highest number seen
  uint64_t from = oldest_;
  if (jump >= kWindow) {
    // The whole window leaves, and the numbers of the jump that never enter it with it.
    skipped.add(pending_ + (jump - kWindow));
    gap_.fill(kAll);
    pending_ = kWindow;
    from = psn - kWindow + 1;
  } else {
    uint64_t left = 0;
    for (uint64_t slot = expect_ % kWindow, n = jump; n != 0;) {
      const uint64_t bit = slot % 64, take = n < 64 - bit ? n : 64 - bit;
      const uint64_t mask = (take == 64 ? kAll : ((uint64_t{1} << take) - 1)) << bit;
      left += static_cast<uint64_t>(std::popcount(gap_[slot / 64] & mask));
      gap_[slot / 64] |= mask;
      slot = (slot + take) % kWindow;
      n -= take;
    }
    if (left != 0) skipped.add(left);
    pending_ += jump - left;
    if (from == kNone) {
      from = psn - jump + 1;  // only the jump's numbers can be pending
    } else if (from + kWindow <= psn) {
      from = psn - kWindow + 1;  // the oldest left: the rest lie from the window's start on
    }
  }
  expect_ = psn + 1;
  gap_[(psn % kWindow) / 64] &= ~(uint64_t{1} << (psn % 64));
  --pending_;
  find_oldest(from);
}

// A number below expect_: taken back when it was pending, else a repeat (or too late to tell:
// it was counted skipped already).
void VtpState::mark_late(uint64_t psn) noexcept {
  if (expect_ - 1 - psn >= kWindow) return;  // the highest - psn, which 0 - 1 keeps right
  uint64_t& word = gap_[(psn % kWindow) / 64];
  const uint64_t bit = uint64_t{1} << (psn % 64);
  if ((word & bit) == 0) return;
  word &= ~bit;
  --pending_;
  if (psn == oldest_) find_oldest(psn + 1);
}

// Every pending number lies in [from, expect_) when called, so the scan starts there; the
// oldest only moves forward, so the scans of a run cost O(numbers / 64) in all.
void VtpState::find_oldest(uint64_t from) noexcept {
  oldest_ = kNone;
  for (uint64_t n = from; pending_ != 0 && n - from < expect_ - from;) {  // n in [from, expect_)
    const uint64_t bit = n % 64;
    const uint64_t word = gap_[(n % kWindow) / 64] >> bit;
    if (word != 0) {
      const uint64_t at = n + static_cast<uint64_t>(std::countr_zero(word));
      if (at - from < expect_ - from) oldest_ = at;
      break;
    }
    n += 64 - bit;
  }
  settle_at_ = step_bound(expect_, oldest_);
}

void VtpState::settle() noexcept {
  if (pending_ == 0) return;
  skipped.add(pending_);
  pending_ = 0;
  gap_.fill(0);
  oldest_ = kNone;
  settle_at_ = step_bound(expect_, kNone);
}

}  // namespace rocecap::capture
