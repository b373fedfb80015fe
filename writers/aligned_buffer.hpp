// A heap buffer aligned for O_DIRECT (posix_memalign), owned RAII. Allocated once when a writer
// is built, so the write path never allocates.
#pragma once

#include <cstddef>
#include <span>

namespace rocecap::writers {

// O_DIRECT needs buffer address, file offset and length aligned to the logical block size;
// 4096 covers every common device (512e and 4Kn).
inline constexpr std::size_t kDirectAlignment = 4096;

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  // `bytes` is rounded up to a multiple of kDirectAlignment. Throws std::bad_alloc.
  explicit AlignedBuffer(std::size_t bytes);
  ~AlignedBuffer();
  AlignedBuffer(AlignedBuffer&& other) noexcept;
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  std::span<std::byte> span() const noexcept { return {data_, size_}; }
  std::size_t size() const noexcept { return size_; }

 private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace rocecap::writers
