// A payload slab in GPU memory (cudaMalloc), for rings whose payload slots the NIC writes
// directly. Start and size are multiples of 64 KiB: the GPU's BAR mapping granularity that
// dma-buf export and nvidia-peermem registration work in (capture/verbs/README.md, via
// doc/verbs.md). The CPU must never dereference data(); only the NIC and CUDA copies touch it.
#pragma once

#include <cstddef>
#include <string>

#include "capture/memory/cuda_runtime.hpp"
#include "capture/memory/payload_memory.hpp"

namespace rocecap::capture::memory {

inline constexpr std::size_t kGpuSlabAlign = std::size_t{64} << 10;

class GpuMemory final : public PayloadMemory {
 public:
  // At least `bytes`, rounded up to 64 KiB, on CUDA device `device`. Throws CudaError naming
  // the call, the device and the size (no GPU, no driver, out of device memory).
  GpuMemory(std::size_t bytes, int device);

  std::byte* data() const noexcept override { return data_; }
  std::size_t size() const noexcept override { return size_; }
  MemoryKind kind() const noexcept override { return MemoryKind::gpu; }
  int device() const noexcept { return buffer_.device(); }
  // The cudaMalloc allocation the slab lies in, and the slab's offset in it (CUDA IPC exports
  // whole allocations: capture/memory/cuda_runtime.hpp ipc_handle_hex).
  const void* allocation() const noexcept { return buffer_.get(); }
  std::size_t offset() const noexcept {
    return static_cast<std::size_t>(data_ - static_cast<std::byte*>(buffer_.get()));
  }
  // One line for the log: "4.0 MiB on GPU 0".
  std::string describe() const;

 private:
  DeviceBuffer buffer_;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace rocecap::capture::memory
