#include "writers/aligned_buffer.hpp"

#include <cstdlib>
#include <new>
#include <utility>

namespace rocecap::writers {

AlignedBuffer::AlignedBuffer(std::size_t bytes) {
  const std::size_t rounded = (bytes + kDirectAlignment - 1) / kDirectAlignment * kDirectAlignment;
  void* p = nullptr;
  if (rounded == 0 || posix_memalign(&p, kDirectAlignment, rounded) != 0) throw std::bad_alloc();
  data_ = static_cast<std::byte*>(p);
  size_ = rounded;
}

AlignedBuffer::~AlignedBuffer() {
  std::free(data_);
}

AlignedBuffer::AlignedBuffer(AlignedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& other) noexcept {
  if (this != &other) {
    std::free(data_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

}  // namespace rocecap::writers
