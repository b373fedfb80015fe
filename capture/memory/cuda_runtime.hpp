// The few CUDA runtime services rocecap needs, behind a header free of CUDA types, so that the
// rest of the tree builds with or without the toolkit (ROCECAP_WITH_CUDA) and one binary
// starts on hosts with no NVIDIA driver: only the CUDA runtime is linked, statically, and the
// one driver call (the dma-buf export) is reached through dlopen("libcuda.so.1") (cuda_driver.hpp).
// Without CUDA in the build every call reports "built without CUDA".
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "capture/memory/gpu_choice.hpp"

namespace rocecap::capture::memory {

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// True when this binary was built with the CUDA toolkit.
bool cuda_built() noexcept;

// Whether GPU `device` can be used, and the words to say so in the log and manifest.
struct GpuProbe {
  bool usable = false;
  int devices = 0;     // CUDA devices seen (0 when the runtime could not count them)
  std::string detail;  // usable: "GPU 0: <name>"; else why not, naming the failed call
  int device = 0;      // the CUDA device probed
};
GpuProbe probe_gpu(int device = 0);

// Every CUDA device with its PCI bus id (cudaDeviceGetPCIBusId). Empty with `why` naming the
// failed call when the runtime cannot count them.
std::vector<GpuCandidate> list_gpus(std::string& why);

// The GPU for the payload slabs: capture.gpu (`setting`) or the one nearest `interfaces`
// (choose_gpu), probed. detail says which, why, and its name or what failed.
GpuProbe probe_chosen_gpu(const std::vector<std::string>& interfaces, const std::string& setting,
                          const std::string& sysfs_root);

// Device memory from cudaMalloc, freed by the destructor (on the device it came from).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // Throws CudaError naming the call, the device and the size.
  DeviceBuffer(std::size_t bytes, int device);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const noexcept { return ptr_; }
  std::size_t size() const noexcept { return bytes_; }
  int device() const noexcept { return device_; }

 private:
  void reset() noexcept;
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  int device_ = 0;
};

// An owned file descriptor (a dma-buf exported from device memory); closed by the destructor.
class DmaBufFd {
 public:
  DmaBufFd() = default;
  explicit DmaBufFd(int fd) noexcept : fd_(fd) {}
  ~DmaBufFd();
  DmaBufFd(DmaBufFd&& other) noexcept : fd_(other.release()) {}
  DmaBufFd& operator=(DmaBufFd&& other) noexcept;
  DmaBufFd(const DmaBufFd&) = delete;
  DmaBufFd& operator=(const DmaBufFd&) = delete;

  int get() const noexcept { return fd_; }
  explicit operator bool() const noexcept { return fd_ >= 0; }
  int release() noexcept {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

// Exports [ptr, ptr + bytes) of device memory (both host-page aligned) as a dma-buf
// (cuMemGetHandleForAddressRange, after checking CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED of the
// pointer's device). On failure returns an empty DmaBufFd and says why in `why`.
DmaBufFd export_dmabuf(const void* ptr, std::size_t bytes, std::string& why);

// A CUDA IPC handle (cudaIpcGetMemHandle) of the allocation whose base is `base` on `device`,
// as 128 hex digits, for a consumer process to map it (cudaIpcOpenMemHandle; doc/consumers.md).
// CUDA exports whole cudaMalloc allocations only ("base pointer of an existing device memory
// allocation"), so `base` is DeviceBuffer::get(), and the slab's offset in it travels apart.
// Empty with `why` set on failure (no IPC on this device, or built without CUDA).
std::string ipc_handle_hex(const void* base, int device, std::string& why);

// Blocking copies between host and device memory, for tests and start-up checks (never the
// hot path). False with `why` set on failure.
bool copy_to_host(void* host, const void* device, std::size_t bytes, std::string& why);
bool copy_to_device(void* device, const void* host, std::size_t bytes, std::string& why);
bool fill_device(void* device, int value, std::size_t bytes, std::string& why);

}  // namespace rocecap::capture::memory
