// ReleaseMask: which streams' rings have slots back since the capture thread last looked.
//
// The verbs source re-posts a ring's free slots after every poll. Asking every ring whether it
// has any (StreamRing::has_free) cost about 10 instructions per packet with 64 streams, spread
// over however few completions a poll returned, and touched every ring's free-queue cache line
// per poll (BENCHMARKS.md, issue 30). Instead each ring sets its stream's bit here when slots
// come back to it (StreamRing::release in the writer thread, give_back in the capture thread),
// and the capture thread takes the set bits once per poll and visits only those rings.
//
// No wake-up is lost: a ring pushes its ids before it sets the bit (release order), and take()
// clears a word before it visits the rings it names (acquire order), so a release the visit did
// not see sets the bit again after the clear and the next take() finds it.
#pragma once

#include <atomic>
#include <bit>
#include <cstdint>
#include <memory>

#include "common/spsc_queue.hpp"  // kCacheLine

namespace rocecap::capture {

class ReleaseMask {
 public:
  explicit ReleaseMask(uint32_t streams)
      : words_((streams + 63) / 64), bits_(std::make_unique<Word[]>(words_)) {}

  uint32_t streams_capacity() const noexcept { return words_ * 64; }

  // Any thread: stream `index` has slots back.
  void mark(uint32_t index) noexcept {
    bits_[index / 64].bits.fetch_or(uint64_t{1} << (index % 64), std::memory_order_release);
  }

  // Capture thread: calls visit(index) for every marked stream, lowest index first, and
  // clears the marks it visits. Stops at the first visit that returns false (the source has
  // failed; the marks not visited are dropped with it) and returns false then.
  template <class Visit>
  bool take(Visit&& visit) noexcept {
    for (uint32_t w = 0; w < words_; ++w) {
      std::atomic<uint64_t>& word = bits_[w].bits;
      // A plain load first: an idle poll reads a shared line instead of taking it exclusive
      // from the writers with a locked exchange.
      if (word.load(std::memory_order_relaxed) == 0) continue;
      for (uint64_t b = word.exchange(0, std::memory_order_acquire); b != 0; b &= b - 1) {
        if (!visit(w * 64 + static_cast<uint32_t>(std::countr_zero(b)))) return false;
      }
    }
    return true;
  }

 private:
  // Own line per word: the writers of different interfaces mark different masks, and the
  // words of one mask are few.
  struct alignas(common::kCacheLine) Word {
    std::atomic<uint64_t> bits{0};
  };
  uint32_t words_;
  std::unique_ptr<Word[]> bits_;
};

}  // namespace rocecap::capture
