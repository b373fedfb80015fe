// CUDA device memory as a scatter target. A real NIC writes GPU memory over PCIe; softverbs
// is a CPU program, so it copies with the CUDA runtime instead. The runtime is dlopen'ed on
// first need (a device pointer that is not host memory), never linked: softverbs stays a
// drop-in libibverbs.so.1 with no CUDA dependency, every process that only uses host memory
// never loads CUDA, and no libcuda is linked anywhere. SOFTVERBS_CUDART names the library
// when it is not on the loader path.
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "sv.hpp"

namespace sv {
namespace {

// The runtime ABI used here: cudaPointerGetAttributes fills a struct whose first member is
// the memory type (cudaMemoryTypeDevice = 2); cudaMemcpy with cudaMemcpyDefault (4) infers
// the direction from unified addresses. Both have been stable since CUDA 10.
constexpr int kMemoryTypeDevice = 2;
constexpr int kMemcpyDefault = 4;
struct PointerAttributes {
  int type;
  int device;
  void* device_pointer;
  void* host_pointer;
  long reserved[16];  // larger than the runtime's struct, whatever its version
};
using GetAttributes = int (*)(PointerAttributes*, const void*);
using Memcpy = int (*)(void*, const void*, size_t, int);
using StreamSynchronize = int (*)(void*);

struct CudaRuntime {
  void* handle = nullptr;
  GetAttributes get_attributes = nullptr;
  Memcpy memcpy = nullptr;
  StreamSynchronize stream_synchronize = nullptr;
};

CudaRuntime load() {
  CudaRuntime rt;
  const char* named = getenv("SOFTVERBS_CUDART");
  // Debian 12's CUDA 11.8 (libcudart11.0) names its runtime libcudart.so.11.0.
  const char* candidates[] = {named, "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0",
                              "libcudart.so"};
  for (const char* name : candidates) {
    if (name == nullptr || *name == '\0') continue;
    rt.handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (rt.handle != nullptr) break;
  }
  if (rt.handle == nullptr) return rt;
  rt.get_attributes = reinterpret_cast<GetAttributes>(dlsym(rt.handle, "cudaPointerGetAttributes"));
  rt.memcpy = reinterpret_cast<Memcpy>(dlsym(rt.handle, "cudaMemcpy"));
  rt.stream_synchronize =
      reinterpret_cast<StreamSynchronize>(dlsym(rt.handle, "cudaStreamSynchronize"));
  if (rt.get_attributes == nullptr || rt.memcpy == nullptr || rt.stream_synchronize == nullptr) {
    rt = CudaRuntime{};
  }
  return rt;
}

const CudaRuntime& runtime() {
  static const CudaRuntime rt = load();  // kept loaded for the life of the process
  return rt;
}

}  // namespace

bool is_device_pointer(const void* p) {
  const CudaRuntime& rt = runtime();
  if (rt.get_attributes == nullptr) return false;
  PointerAttributes a{};
  return rt.get_attributes(&a, p) == 0 && a.type == kMemoryTypeDevice;
}

// A NIC's completion is written after its payload write (PCIe posted-write ordering), so a
// reader that saw the CQE sees the bytes. cudaMemcpy from pageable host memory to the device
// gives no such promise: it returns once the bytes are in the driver's staging memory, "but the
// DMA to final destination may not have completed" (CUDA Runtime API, "API synchronization
// behavior"). Seen on an H200: with a second process's kernels on the GPU, rocecapd's staging
// copy read zeros for a frame softverbs had completed. So the default stream the copy went on
// is synchronised before the completion is made.
bool cuda_copy(void* dst, const void* src, size_t bytes) {
  const CudaRuntime& rt = runtime();
  return rt.memcpy != nullptr && rt.memcpy(dst, src, bytes, kMemcpyDefault) == 0 &&
         rt.stream_synchronize(nullptr) == 0;
}

bool peer_memory_loaded() {
  const char* m = getenv("SOFTVERBS_PEERMEM");
  return m != nullptr && std::strcmp(m, "1") == 0;
}

}  // namespace sv
