// The CUDA services through the CUDA runtime (linked statically). The driver is never linked:
// cuMemGetHandleForAddressRange is looked up at run time with cudaGetDriverEntryPointByVersion,
// so a host without the NVIDIA driver gets a clear "no usable GPU" instead of a binary that
// does not start.
#ifdef ROCECAP_HAVE_CUDA

#include "capture/memory/cuda_runtime.hpp"

#include <cuda.h>  // types only: the driver library is not linked
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

namespace rocecap::capture::memory {
namespace {

// cuMemGetHandleForAddressRange appeared in CUDA 11.7.
constexpr unsigned kDmaBufExportVersion = 11070;

std::string error_text(const char* call, cudaError_t e) {
  return std::string(call) + ": " + cudaGetErrorString(e) + " (" + cudaGetErrorName(e) + ")";
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

GpuProbe probe_gpu(int device) {
  GpuProbe p;
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

DmaBufFd export_dmabuf(const void* ptr, std::size_t bytes, std::string& why) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (!check(cudaGetDriverEntryPointByVersion("cuMemGetHandleForAddressRange", &fn,
                                              kDmaBufExportVersion, cudaEnableDefault, &found),
             "cudaGetDriverEntryPointByVersion(cuMemGetHandleForAddressRange)", why)) {
    return DmaBufFd{};
  }
  if (fn == nullptr || found != cudaDriverEntryPointSuccess) {
    why = "cuMemGetHandleForAddressRange: not offered by this NVIDIA driver (needs CUDA 11.7+)";
    return DmaBufFd{};
  }
  auto get_handle = reinterpret_cast<PFN_cuMemGetHandleForAddressRange_v11070>(fn);
  int fd = -1;
  const CUresult r = get_handle(&fd, reinterpret_cast<CUdeviceptr>(ptr), bytes,
                                CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
  if (r != CUDA_SUCCESS) {
    // The driver's error-string call would need another entry point lookup; the code and the
    // usual cause say enough for the log.
    why = "cuMemGetHandleForAddressRange(DMA_BUF_FD): CUresult " + std::to_string(int(r)) +
          (r == CUDA_ERROR_NOT_SUPPORTED
               ? " (not supported: needs the open NVIDIA kernel modules and Turing or newer)"
               : "");
    return DmaBufFd{};
  }
  return DmaBufFd{fd};
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
