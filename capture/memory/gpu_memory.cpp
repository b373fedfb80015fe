#include "capture/memory/gpu_memory.hpp"

#include <cstdint>

namespace rocecap::capture::memory {
namespace {

std::size_t round_up(std::size_t n, std::size_t unit) {
  return (n + unit - 1) / unit * unit;
}

}  // namespace

// cudaMalloc only promises 256-byte alignment, so one extra 64 KiB unit is allocated and the
// slab starts at the first 64 KiB boundary inside it.
GpuMemory::GpuMemory(std::size_t bytes, int device)
    : buffer_(round_up(bytes == 0 ? 1 : bytes, kGpuSlabAlign) + kGpuSlabAlign, device),
      size_(buffer_.size() - kGpuSlabAlign) {
  const auto base = reinterpret_cast<std::uintptr_t>(buffer_.get());
  data_ = reinterpret_cast<std::byte*>(round_up(base, kGpuSlabAlign));
}

std::string GpuMemory::describe() const {
  const double mib = static_cast<double>(size_) / double(1 << 20);
  std::string s = std::to_string(mib);
  s.resize(s.find('.') + 2);
  return s + " MiB on GPU " + std::to_string(device());
}

}  // namespace rocecap::capture::memory
