// Bounded single-producer single-consumer queue of trivially copyable values.
//
// Storage is allocated once in the constructor; push and pop never allocate, lock or block.
// The producer publishes its tail with a release store and the consumer its head likewise, so
// whatever the producer wrote before a push (slot contents, metadata) is visible to the
// consumer once it pops that entry. Each side keeps a private copy of the other side's index
// and re-reads the shared one only when that copy says full or empty, which keeps the two
// cache lines from bouncing on every operation.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <type_traits>

namespace rocecap::common {

inline constexpr std::size_t kCacheLine = 64;

template <class T>
class SpscQueue {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  // Capacity is min_capacity rounded up to a power of two (at least 1).
  explicit SpscQueue(std::size_t min_capacity)
      : capacity_(checked_capacity(min_capacity)),
        mask_(capacity_ - 1),
        items_(std::make_unique<T[]>(capacity_)) {}
  SpscQueue(const SpscQueue&) = delete;
  SpscQueue& operator=(const SpscQueue&) = delete;

  std::size_t capacity() const noexcept { return capacity_; }

  // Producer. False when full.
  bool push(const T& v) noexcept { return push(std::span<const T>(&v, 1)) == 1; }

  // Producer. Pushes as many of `vs` as fit, in order; returns how many.
  std::size_t push(std::span<const T> vs) noexcept {
    const uint64_t tail = prod_.tail.load(std::memory_order_relaxed);
    if (tail + vs.size() - prod_.head_cache > capacity_)
      prod_.head_cache = cons_.head.load(std::memory_order_acquire);
    const std::size_t n = std::min<std::size_t>(vs.size(), capacity_ - (tail - prod_.head_cache));
    for (std::size_t k = 0; k < n; ++k)
      items_[(tail + k) & mask_] = vs[k];
    if (n != 0) prod_.tail.store(tail + n, std::memory_order_release);
    return n;
  }

  // Consumer. False when empty.
  bool pop(T& out) noexcept { return pop(std::span<T>(&out, 1)) == 1; }

  // Consumer. Pops up to out.size() values in order; returns how many.
  std::size_t pop(std::span<T> out) noexcept {
    const uint64_t head = cons_.head.load(std::memory_order_relaxed);
    if (cons_.tail_cache - head < out.size())
      cons_.tail_cache = prod_.tail.load(std::memory_order_acquire);
    const std::size_t n = std::min<std::size_t>(out.size(), cons_.tail_cache - head);
    for (std::size_t k = 0; k < n; ++k)
      out[k] = items_[(head + k) & mask_];
    if (n != 0) cons_.head.store(head + n, std::memory_order_release);
    return n;
  }

  // Consumer. Whether pop() would return a value now. Re-reads the producer's tail only when
  // the private copy says empty, as pop() does: a check that costs a few instructions, for a
  // consumer that looks at many queues that are mostly empty.
  bool readable() noexcept {
    const uint64_t head = cons_.head.load(std::memory_order_relaxed);
    if (cons_.tail_cache != head) return true;
    cons_.tail_cache = prod_.tail.load(std::memory_order_acquire);
    return cons_.tail_cache != head;
  }

  // Any thread; exact only when both sides are quiet.
  std::size_t size_approx() const noexcept {
    const uint64_t head = cons_.head.load(std::memory_order_acquire);
    const uint64_t tail = prod_.tail.load(std::memory_order_acquire);
    return tail >= head ? static_cast<std::size_t>(tail - head) : 0;
  }

 private:
  static std::size_t checked_capacity(std::size_t n) {
    if (n > (std::size_t{1} << 31)) throw std::length_error("SpscQueue capacity above 2^31");
    return std::bit_ceil(std::max<std::size_t>(n, 1));
  }

  struct alignas(kCacheLine) ProducerSide {
    std::atomic<uint64_t> tail{0};
    uint64_t head_cache = 0;
  };
  struct alignas(kCacheLine) ConsumerSide {
    std::atomic<uint64_t> head{0};
    uint64_t tail_cache = 0;
  };

  ProducerSide prod_;
  ConsumerSide cons_;
  const std::size_t capacity_;
  const std::size_t mask_;
  std::unique_ptr<T[]> items_;
};

}  // namespace rocecap::common
