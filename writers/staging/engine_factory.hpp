// Picks the CopyEngine for a ring's payload memory.
#pragma once

#include <memory>

#include "capture/memory/payload_memory.hpp"
#include "writers/staging/copy_engine.hpp"

namespace rocecap::writers::staging {

// True when this build has the CUDA engine (ROCECAP_HAVE_CUDA).
bool cuda_engine_built() noexcept;

// gpu: the CUDA engine on `cuda_device` (-1: the current one; std::runtime_error when this
// build has no CUDA or the runtime refuses); host: the memcpy engine.
std::unique_ptr<CopyEngine> make_copy_engine(capture::memory::MemoryKind kind,
                                             int cuda_device = -1);

}  // namespace rocecap::writers::staging
