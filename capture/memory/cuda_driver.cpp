// See cuda_driver.hpp. Only in builds with the CUDA toolkit.
#ifdef ROCECAP_HAVE_CUDA

#include "capture/memory/cuda_driver.hpp"

#include <dlfcn.h>

namespace rocecap::capture::memory {
namespace {

constexpr const char* kLibrary = "libcuda.so.1";

template <typename Fn>
bool bind(void* handle, const char* name, Fn& fn, std::string& why) {
  fn = reinterpret_cast<Fn>(::dlsym(handle, name));
  if (fn == nullptr && why.empty()) {
    why = std::string(kLibrary) + " has no " + name + " (NVIDIA driver older than CUDA 11.7)";
  }
  return fn != nullptr;
}

}  // namespace

void CudaDriver::Closer::operator()(void* h) const noexcept {
  ::dlclose(h);
}

CudaDriver::CudaDriver() {
  // RTLD_NOLOAD first: the CUDA runtime has normally loaded the driver already.
  void* h = ::dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (h == nullptr) h = ::dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* err = ::dlerror();
    why_ = std::string("dlopen(") + kLibrary + "): " + (err != nullptr ? err : "failed") +
           " (no NVIDIA driver installed)";
    return;
  }
  std::unique_ptr<void, Closer> handle(h);
  const bool all =
      bind(h, "cuInit", init, why_) && bind(h, "cuDeviceGet", device_get, why_) &&
      bind(h, "cuDeviceGetAttribute", device_get_attribute, why_) &&
      bind(h, "cuMemGetHandleForAddressRange", mem_get_handle_for_address_range, why_) &&
      bind(h, "cuGetErrorName", get_error_name, why_);
  if (all) handle_ = std::move(handle);
}

const CudaDriver& CudaDriver::get() {
  static const CudaDriver driver;  // C++ guarantees one thread-safe initialisation
  return driver;
}

std::string CudaDriver::error_text(const char* call, CUresult r) const {
  const char* name = nullptr;
  if (get_error_name == nullptr || get_error_name(r, &name) != CUDA_SUCCESS || name == nullptr) {
    name = "unknown CUresult";
  }
  return std::string(call) + ": " + name + " (code " + std::to_string(static_cast<int>(r)) + ")";
}

}  // namespace rocecap::capture::memory

#endif
