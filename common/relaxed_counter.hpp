// A counter with exactly one writing thread that any thread may read at any time.
//
// The capture and writer threads count per packet; the metrics exposer reads at scrape time.
// A read-modify-write atomic (lock add) would be needless with a single writer, so the writer
// does a relaxed load and a relaxed store: on x86 and ARM these are plain moves, yet a reader
// never sees a torn value.
#pragma once

#include <atomic>
#include <cstdint>

namespace rocecap::common {

class RelaxedCounter {
 public:
  // Writer thread only.
  void add(uint64_t n = 1) noexcept { set(get() + n); }
  void sub(uint64_t n = 1) noexcept { set(get() - n); }
  void set(uint64_t v) noexcept { value_.store(v, std::memory_order_relaxed); }
  // Any thread.
  uint64_t get() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

}  // namespace rocecap::common
