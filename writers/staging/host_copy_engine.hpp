// The CopyEngine for payload slabs the CPU may read: one memcpy per row, done when queued.
// It lets a host ring go through the staging path (tests, the daemon's forced-staging option)
// and is the reference the CUDA engine is compared against.
#pragma once

#include <string>

#include "writers/staging/copy_engine.hpp"

namespace rocecap::writers::staging {

class HostCopyEngine : public CopyEngine {
 public:
  static constexpr unsigned kLanes = 2;

  // 4096-aligned (so direct I/O could take it as is), zeroed.
  PinnedBuffer allocate_pinned(std::size_t bytes) override;
  unsigned lanes() const noexcept override { return kLanes; }
  bool flush_gpudirect_writes() noexcept override { return true; }
  bool copy_2d(unsigned lane, const Copy2D& c) noexcept override;
  bool record_fence(unsigned lane) noexcept override { return lane < kLanes; }
  FenceState query_fence(unsigned lane) noexcept override {
    return lane < kLanes ? FenceState::done : FenceState::failed;
  }
  bool wait_fence(unsigned lane) noexcept override { return lane < kLanes; }
  std::string last_error() const override { return {}; }
  std::string describe() const override { return "host memcpy"; }
};

// Rows one at a time (shared with test engines that defer the copy).
void copy_rows(const Copy2D& c) noexcept;

}  // namespace rocecap::writers::staging
