// The few CUDA driver API calls rocecap makes (the dma-buf export and the device attribute that
// says whether it can work), reached through dlopen("libcuda.so.1") at run time.
//
// Why dlopen and not the runtime's entry-point query: cudaGetDriverEntryPointByVersion exists
// only from CUDA 12.5 and cudaGetDriverEntryPoint changed its signature in 12.0, so neither
// builds against every toolkit we support (Debian 12's 11.8 up to 13.x). libcuda.so.1 is the
// driver's stable soname (the CUDA runtime itself loads it the same way), and the calls used
// here are unversioned exports since CUDA 11.7. Never linked: the libcuda stub in a binary makes
// it fail to start on a host without the NVIDIA driver. Only built with CUDA (cuda_runtime.cpp).
#pragma once

#include <cuda.h>  // types and enum values only

#include <memory>
#include <string>

namespace rocecap::capture::memory {

class CudaDriver {
 public:
  // The process-wide instance, loaded on first use; loaded() false with why() when the
  // library or one of its symbols is missing.
  static const CudaDriver& get();

  bool loaded() const noexcept { return handle_ != nullptr; }
  const std::string& why() const noexcept { return why_; }

  CUresult (*init)(unsigned int) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*device_get_attribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*mem_get_handle_for_address_range)(void*, CUdeviceptr, size_t, CUmemRangeHandleType,
                                               unsigned long long) = nullptr;  // NOLINT
  CUresult (*get_error_name)(CUresult, const char**) = nullptr;

  // "cuFoo: CUDA_ERROR_NAME (code N)" for a failed call.
  std::string error_text(const char* call, CUresult r) const;

 private:
  CudaDriver();
  struct Closer {
    void operator()(void* h) const noexcept;
  };
  std::unique_ptr<void, Closer> handle_;
  std::string why_;
};

}  // namespace rocecap::capture::memory
