// Registering a ring's payload slab with the NIC. Host memory: ibv_reg_mr. GPU memory, in the
// order VERBS.md gives: dma-buf (the CUDA driver exports the range, ibv_reg_dmabuf_mr imports
// it; needs Linux >= 5.12 and the open NVIDIA kernel modules), then peer memory (ibv_reg_mr on
// the device pointer, which works only with the nvidia_peermem module loaded). The same chain
// runs once at start-up on a small GPU buffer (probe_gpu_registration) so that
// payload_memory auto/gpu is decided before any ring is allocated.
#pragma once

#include <string>

#include "capture/memory/payload_choice.hpp"
#include "capture/payload_memory.hpp"
#include "capture/verbs/verbs_objects.hpp"

namespace rocecap::capture::verbs {

struct PayloadRegistration {
  MemoryRegion mr;
  std::string method;  // "host", "dma-buf" or "peer memory"
};

// Throws VerbsError starting with `what` and naming every path tried and why it failed.
PayloadRegistration register_payload(ibv_pd* pd, const PayloadMemory& memory,
                                     const std::string& what);

// Opens RDMA device `device`, allocates 64 KiB on CUDA device `gpu` and registers it through
// the chain. Never throws: failures are the returned detail.
memory::RegistrationPath probe_gpu_registration(const std::string& device, int gpu);

// libmlx5 may copy small frames out of the CQE into the SGE addresses with the CPU, which must
// not happen when SGE1 is GPU memory. Must run before the device is opened (libmlx5 reads it
// when a context is created); start-up only (setenv is not thread-safe).
void disable_cqe_scatter();

}  // namespace rocecap::capture::verbs
