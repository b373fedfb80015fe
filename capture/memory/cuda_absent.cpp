// The CUDA services in a build without the CUDA toolkit: nothing is usable, and every answer
// says that the build is the reason, so a `payload_memory: gpu` refusal is self-explaining.
#ifndef ROCECAP_HAVE_CUDA

#include "capture/memory/cuda_runtime.hpp"

namespace rocecap::capture::memory {
namespace {

constexpr const char* kNoCuda =
    "built without CUDA (the CUDA toolkit was not found or ROCECAP_WITH_CUDA=OFF)";

bool absent(std::string& why) {
  why = kNoCuda;
  return false;
}

}  // namespace

bool cuda_built() noexcept {
  return false;
}

GpuProbe probe_gpu(int device) {
  return GpuProbe{false, 0, kNoCuda, device};
}

std::vector<GpuCandidate> list_gpus(std::string& why) {
  absent(why);
  return {};
}

DeviceBuffer::DeviceBuffer(std::size_t /*bytes*/, int /*device*/) {
  throw CudaError(std::string("cudaMalloc: ") + kNoCuda);
}

void DeviceBuffer::reset() noexcept {
  ptr_ = nullptr;
  bytes_ = 0;
}

DmaBufFd export_dmabuf(const void* /*ptr*/, std::size_t /*bytes*/, std::string& why) {
  absent(why);
  return DmaBufFd{};
}

std::string ipc_handle_hex(const void* /*base*/, int /*device*/, std::string& why) {
  absent(why);
  return {};
}

bool copy_to_host(void* /*host*/, const void* /*device*/, std::size_t /*bytes*/, std::string& why) {
  return absent(why);
}

bool copy_to_device(void* /*device*/, const void* /*host*/, std::size_t /*bytes*/,
                    std::string& why) {
  return absent(why);
}

bool fill_device(void* /*device*/, int /*value*/, std::size_t /*bytes*/, std::string& why) {
  return absent(why);
}

}  // namespace rocecap::capture::memory

#endif
