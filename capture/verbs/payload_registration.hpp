// Registering a ring's payload slab with the NIC. Host memory: ibv_reg_mr. GPU memory, in the
// order doc/verbs.md gives: dma-buf (the CUDA driver exports the range, ibv_reg_dmabuf_mr imports
// it; needs Linux >= 5.12 and the open NVIDIA kernel modules), then peer memory (ibv_reg_mr on
// the device pointer, which works only with the nvidia_peermem module loaded, and that loads
// only on a kernel with MLNX_OFED's / DOCA-OFED's peer-memory API: on a stock kernel with
// Debian's rdma-core, dma-buf is the only way). The same chain
// runs at start-up on slabs of the run's real sizes (GpuRegistrationTrial) so that
// payload_memory auto/gpu is decided before any ring is allocated.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "capture/memory/payload_choice.hpp"
#include "capture/memory/payload_memory.hpp"
#include "capture/verbs/verbs_objects.hpp"

namespace rocecap::capture::verbs {

struct PayloadRegistration {
  MemoryRegion mr;
  std::string method;  // "host", "dma-buf" or "peer memory"
};

// Throws VerbsError starting with `what` and naming every path tried and why it failed.
PayloadRegistration register_payload(ibv_pd* pd, const memory::PayloadMemory& memory,
                                     const std::string& what);

// Registering GPU slabs of a run's real number and sizes before the run commits to GPU memory.
// dma-buf and peer-memory registrations both map the slab through the GPU's BAR1 window (256 MiB
// on many boards, far less than the device memory; nvidia-smi -q -d MEMORY shows it), so a
// 64 KiB probe can pass where the run's hundreds of MiB cannot. Every slab is allocated and
// registered, across all RDMA devices, and held until the trial is destroyed; the run then
// allocates its own.
class GpuRegistrationTrial {
 public:
  // Makes one slab of `bytes`; default: GpuMemory on CUDA device `gpu`. Tests substitute one.
  using SlabFactory = std::function<std::unique_ptr<memory::PayloadMemory>(std::size_t bytes)>;
  explicit GpuRegistrationTrial(int gpu, SlabFactory make = {});

  // Opens RDMA device `device` and registers one slab per entry of `slab_bytes` on it, keeping
  // them with those already held. Never throws: false with what failed (which slab, the sizes,
  // the registration chain's reasons) in detail; ok: the method and the sizes.
  memory::RegistrationPath add(const std::string& device,
                               const std::vector<std::size_t>& slab_bytes);

  std::size_t slabs() const noexcept;
  std::size_t bytes() const noexcept { return bytes_; }

 private:
  struct Held {
    Context ctx;
    ProtectionDomain pd;
    std::vector<std::unique_ptr<memory::PayloadMemory>> slabs;
    std::vector<MemoryRegion> mrs;  // destroyed first (members go in reverse order)
  };
  SlabFactory make_;
  std::vector<Held> held_;
  std::size_t bytes_ = 0;
};

// Opens RDMA device `device`, allocates 64 KiB on CUDA device `gpu` and registers it through
// the chain. Never throws: failures are the returned detail.
memory::RegistrationPath probe_gpu_registration(const std::string& device, int gpu);

// libmlx5 may copy small frames out of the CQE into the SGE addresses with the CPU, which must
// not happen when SGE1 is GPU memory. Must run before the device is opened (libmlx5 reads it
// when a context is created); start-up only (setenv is not thread-safe).
void disable_cqe_scatter();

}  // namespace rocecap::capture::verbs
