// CopyEngine: what the payload stager needs from whatever moves payload bytes out of a ring's
// payload slab into host memory the writers can read (doc/design.md, "Data path").
//
// The CUDA engine (cuda_copy_engine.hpp) runs the copies on a CUDA stream from device memory
// into page-locked host memory; the host engine (host_copy_engine.hpp) does the same with
// memcpy, so every piece of staging logic above this interface is tested byte for byte on
// machines without a GPU. Copies are queued on a *lane* (one per staging buffer) and complete
// in the order they were queued on that lane; a fence recorded on the lane says when all of
// them did.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace rocecap::writers::staging {

// A strided block: `rows` rows of `width` bytes, src rows `src_pitch` apart (the payload slot
// stride), dst rows `dst_pitch` apart (packed: the payload bytes of one frame).
struct Copy2D {
  std::byte* dst = nullptr;
  std::size_t dst_pitch = 0;
  const std::byte* src = nullptr;
  std::size_t src_pitch = 0;
  std::size_t width = 0;
  std::size_t rows = 0;
};

// Host memory the engine can copy into at full speed (page-locked for CUDA). Move-only; the
// engine that allocated it supplies the release function and must outlive it.
class PinnedBuffer {
 public:
  using Release = void (*)(std::byte*) noexcept;
  PinnedBuffer() = default;
  PinnedBuffer(std::byte* data, std::size_t size, Release release) noexcept
      : data_(data), size_(size), release_(release) {}
  PinnedBuffer(PinnedBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)),
        size_(std::exchange(o.size_, 0)),
        release_(o.release_) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
      release_ = o.release_;
    }
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() { reset(); }

  std::byte* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }

 private:
  void reset() noexcept {
    if (data_ != nullptr && release_ != nullptr) release_(data_);
    data_ = nullptr;
  }
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  Release release_ = nullptr;
};

enum class FenceState : uint8_t { done, pending, failed };

class CopyEngine {
 public:
  virtual ~CopyEngine() = default;

  // Staging memory of `bytes`; throws std::runtime_error naming the call and the size.
  virtual PinnedBuffer allocate_pinned(std::size_t bytes) = 0;
  // Lanes the engine keeps (fences are per lane); the stager uses two.
  virtual unsigned lanes() const noexcept = 0;

  // Makes the NIC's GPUDirect RDMA writes that completed so far visible to the copies queued
  // after this call, where the device does not order them itself. False on an error.
  virtual bool flush_gpudirect_writes() noexcept = 0;
  // Queues one strided copy on `lane`. False when it could not be queued.
  virtual bool copy_2d(unsigned lane, const Copy2D& c) noexcept = 0;
  // Marks the end of the copies queued on `lane` so far. False on an error.
  virtual bool record_fence(unsigned lane) noexcept = 0;
  // State of the latest fence of `lane`, without blocking.
  virtual FenceState query_fence(unsigned lane) noexcept = 0;
  // Blocks until the latest fence of `lane` is done (true) or failed (false).
  virtual bool wait_fence(unsigned lane) noexcept = 0;

  // The last error as text (the call and the runtime's message); empty when none.
  virtual std::string last_error() const = 0;
  // One line for the log: the engine and the device it copies from.
  virtual std::string describe() const = 0;
};

}  // namespace rocecap::writers::staging
