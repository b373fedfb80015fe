#include "writers/staging/engine_factory.hpp"

#include <stdexcept>

#include "writers/staging/host_copy_engine.hpp"
#ifdef ROCECAP_HAVE_CUDA
#include "writers/staging/cuda/cuda_copy_engine.hpp"
#endif

namespace rocecap::writers::staging {

bool cuda_engine_built() noexcept {
#ifdef ROCECAP_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

std::unique_ptr<CopyEngine> make_copy_engine(capture::memory::MemoryKind kind,
                                             [[maybe_unused]] int cuda_device) {
  if (kind == capture::memory::MemoryKind::host) return std::make_unique<HostCopyEngine>();
#ifdef ROCECAP_HAVE_CUDA
  return std::make_unique<CudaCopyEngine>(cuda_device);
#else
  throw std::runtime_error(
      "GPU payload staging: this rocecap was built without CUDA (ROCECAP_WITH_CUDA)");
#endif
}

}  // namespace rocecap::writers::staging
