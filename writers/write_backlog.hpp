// The writes of one output target handed to the kernel and not completed yet: a write() or
// writev() while it runs, an io_uring write from submission to completion. OutputFile adds and
// removes its writes (OutputOptions::backlog); OutputTargets keeps one per target, reads it when
// it places a file (a target whose writes sit in flight is behind before any of them completes:
// its write latency alone would say so only once they do) and publishes the bytes.
//
// Changed once per write (a staging buffer, 1 MiB by default), never per record, under a mutex
// of its own: the count and the sum of start times must be read together (read apart, a mean
// age could be off by the whole uptime). Start times are summed in microseconds since the
// backlog was made: 100,000 writes in flight after a year of running stay below 2^64.
#pragma once

#include <cstdint>
#include <mutex>

namespace rocecap::writers {

class WriteBacklog {
 public:
  struct Sample {
    uint64_t writes = 0;
    uint64_t bytes = 0;
    uint64_t mean_age_ns = 0;  // of the writes in flight at the sample; 0 when none
  };

  // `epoch_ns`: CLOCK_MONOTONIC now (the times given below are on that clock).
  explicit WriteBacklog(uint64_t epoch_ns) noexcept : epoch_ns_(epoch_ns) {}

  void begin(uint64_t bytes, uint64_t start_ns) noexcept {
    std::lock_guard lock(mutex_);
    ++writes_;
    bytes_ += bytes;
    start_sum_ += us(start_ns);
  }
  // `bytes` and `start_ns` as given to begin().
  void end(uint64_t bytes, uint64_t start_ns) noexcept {
    std::lock_guard lock(mutex_);
    if (writes_ == 0) return;
    --writes_;
    bytes_ -= bytes < bytes_ ? bytes : bytes_;
    start_sum_ -= us(start_ns) < start_sum_ ? us(start_ns) : start_sum_;
  }
  Sample sample(uint64_t now_ns) const noexcept {
    std::lock_guard lock(mutex_);
    Sample s{writes_, bytes_, 0};
    const uint64_t all = writes_ * us(now_ns);
    if (writes_ > 0 && all > start_sum_) s.mean_age_ns = (all - start_sum_) / writes_ * 1000;
    return s;
  }

 private:
  uint64_t us(uint64_t ns) const noexcept { return ns > epoch_ns_ ? (ns - epoch_ns_) / 1000 : 0; }

  const uint64_t epoch_ns_;
  mutable std::mutex mutex_;
  uint64_t writes_ = 0;
  uint64_t bytes_ = 0;
  uint64_t start_sum_ = 0;
};

}  // namespace rocecap::writers
