// The CUDA services through the CUDA runtime (linked statically). The driver is never linked:
// the one driver call, cuMemGetHandleForAddressRange, goes through CudaDriver (dlopen of
// libcuda.so.1), so a host without the NVIDIA driver gets a clear "no usable GPU" instead of a
// binary that does not start, and the code builds with CUDA 11.8 to 13.x alike.
#ifdef ROCECAP_HAVE_CUDA

#include "capture/memory/cuda_runtime.hpp"

#include <cuda_runtime_api.h>

#include <string>

#include "capture/memory/cuda_driver.hpp"

namespace rocecap::capture::memory {
namespace {

// The driver branch this build's runtime needs (CUDA minor version compatibility: 11.x runs on
// drivers from branch 450, 12.x from 525, 13.x from 580; NVIDIA's CUDA Compatibility guide).
// The runtime is linked statically, so it is the toolkit's, not whatever the host has.
std::string driver_needed() {
  const int major = CUDART_VERSION / 1000;
  const int branch = major >= 13 ? 580 : major == 12 ? 525 : 450;
  return "no NVIDIA driver, or an older one: this build's CUDA " + std::to_string(major) + "." +
         std::to_string(CUDART_VERSION % 1000 / 10) + " runtime needs an NVIDIA driver of branch " +
         std::to_string(branch) + " or later";
}

std::string error_text(const char* call, cudaError_t e) {
  std::string text =
      std::string(call) + ": " + cudaGetErrorString(e) + " (" + cudaGetErrorName(e) + ")";
  if (e == cudaErrorInsufficientDriver) text += ": " + driver_needed();
  return text;
}

bool check(cudaError_t e, const char* call, std::string& why) {
  if (e == cudaSuccess) return true;
  why = error_text(call, e);
  return false;
}

}  // namespace

bool cuda_built() noexcept {
  return true;
}

std::vector<GpuCandidate> list_gpus(std::string& why) {
  int n = 0;
  std::vector<GpuCandidate> gpus;
  if (!check(cudaGetDeviceCount(&n), "cudaGetDeviceCount", why)) return gpus;
  for (int i = 0; i < n; ++i) {
    char id[32] = {};  // "0000:3B:00.0" or "00000000:3B:00.0"
    std::string ignored;
    if (!check(cudaDeviceGetPCIBusId(id, sizeof id, i), "cudaDeviceGetPCIBusId", ignored)) {
      id[0] = '\0';  // proximity unknown; the GPU can still be chosen by index
    }
    gpus.push_back({i, id});
  }
  return gpus;
}

GpuProbe probe_gpu(int device) {
  GpuProbe p;
  p.device = device;
  if (!check(cudaGetDeviceCount(&p.devices), "cudaGetDeviceCount", p.detail)) {
    p.devices = 0;
    return p;
  }
  if (device < 0 || device >= p.devices) {
    p.detail = "GPU " + std::to_string(device) + " requested, " + std::to_string(p.devices) +
               " CUDA device(s) present";
    return p;
  }
  cudaDeviceProp prop{};
  if (!check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties", p.detail)) {
    return p;
  }
  p.usable = true;
  p.detail = "GPU " + std::to_string(device) + ": " + prop.name;
  return p;
}

DeviceBuffer::DeviceBuffer(std::size_t bytes, int device) : bytes_(bytes), device_(device) {
  std::string why;
  if (!check(cudaSetDevice(device), "cudaSetDevice", why) ||
      !check(cudaMalloc(&ptr_, bytes), "cudaMalloc", why)) {
    ptr_ = nullptr;
    throw CudaError(why + " (GPU " + std::to_string(device) + ", " + std::to_string(bytes) +
                    " bytes)");
  }
}

void DeviceBuffer::reset() noexcept {
  if (ptr_ != nullptr) {
    // cudaFree works on any device's pointer under unified addressing; the device is set
    // anyway so a caller's current-device choice cannot matter.
    (void)cudaSetDevice(device_);
    (void)cudaFree(ptr_);
  }
  ptr_ = nullptr;
  bytes_ = 0;
}

namespace {

// The CUDA device `ptr` belongs to; false with `why` for host or unknown memory.
bool device_of(const void* ptr, int& device, std::string& why) {
  cudaPointerAttributes a{};
  if (!check(cudaPointerGetAttributes(&a, ptr), "cudaPointerGetAttributes", why)) return false;
  if (a.type != cudaMemoryTypeDevice) {
    why = "cudaPointerGetAttributes: not CUDA device memory";
    return false;
  }
  device = a.device;
  return true;
}

// CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED (CUDA 11.7+) is 1 only where the driver can export
// device memory as a dma-buf (open kernel modules, Turing or newer, Linux >= 5.12); the CUDA
// driver API reference says to check it before cuMemGetHandleForAddressRange.
bool dmabuf_supported(const CudaDriver& drv, int ordinal, std::string& why) {
  CUresult r = drv.init(0);
  CUdevice dev = 0;
  if (r == CUDA_SUCCESS) r = drv.device_get(&dev, ordinal);
  int supported = 0;
  if (r == CUDA_SUCCESS) {
    r = drv.device_get_attribute(&supported, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, dev);
  }
  if (r != CUDA_SUCCESS) {
    why = drv.error_text("cuDeviceGetAttribute(DMA_BUF_SUPPORTED)", r);
    return false;
  }
  if (supported == 0) {
    why = "GPU " + std::to_string(ordinal) +
          " cannot export dma-bufs (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0: needs the open "
          "NVIDIA kernel modules, Turing or newer, Linux >= 5.12)";
  }
  return supported != 0;
}

}  // namespace

DmaBufFd export_dmabuf(const void* ptr, std::size_t bytes, std::string& why) {
  int ordinal = 0;
  if (!device_of(ptr, ordinal, why)) return DmaBufFd{};
  const CudaDriver& drv = CudaDriver::get();
  if (!drv.loaded()) {
    why = drv.why();
    return DmaBufFd{};
  }
  if (!dmabuf_supported(drv, ordinal, why)) return DmaBufFd{};
  int fd = -1;
  const CUresult r = drv.mem_get_handle_for_address_range(
      &fd, reinterpret_cast<CUdeviceptr>(ptr), bytes, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
  if (r != CUDA_SUCCESS) {
    why = drv.error_text("cuMemGetHandleForAddressRange(DMA_BUF_FD)", r);
    return DmaBufFd{};
  }
  return DmaBufFd{fd};
}

std::string ipc_handle_hex(const void* base, int device, std::string& why) {
  cudaIpcMemHandle_t h;
  if (!check(cudaSetDevice(device), "cudaSetDevice", why) ||
      !check(cudaIpcGetMemHandle(&h, const_cast<void*>(base)), "cudaIpcGetMemHandle", why)) {
    return {};
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (std::size_t i = 0; i < sizeof h.reserved; ++i) {
    const auto b = static_cast<unsigned char>(h.reserved[i]);
    hex += kHex[b >> 4];
    hex += kHex[b & 15];
  }
  return hex;
}

bool copy_to_host(void* host, const void* device, std::size_t bytes, std::string& why) {
  return check(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy", why);
}

bool copy_to_device(void* device, const void* host, std::size_t bytes, std::string& why) {
  return check(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy", why);
}

bool fill_device(void* device, int value, std::size_t bytes, std::string& why) {
  return check(cudaMemset(device, value, bytes), "cudaMemset", why) &&
         check(cudaDeviceSynchronize(), "cudaDeviceSynchronize", why);
}

}  // namespace rocecap::capture::memory

#endif
