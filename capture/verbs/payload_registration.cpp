#include "capture/verbs/payload_registration.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <utility>

#include "capture/memory/gpu_memory.hpp"

namespace rocecap::capture::verbs {
namespace {

// Nothing remote touches the slabs: the NIC writes them locally.
constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE;

bool exists(const char* path) {
  struct stat st {};
  return ::stat(path, &st) == 0;
}

std::string errno_text(int err) {
  const char* name = strerrorname_np(err);
  return std::string(std::strerror(err)) + " (" + (name != nullptr ? name : "?") + ")";
}

MemoryRegion try_dmabuf(ibv_pd* pd, const memory::PayloadMemory& m, std::string& why) {
  std::string export_why;
  const memory::DmaBufFd fd = memory::export_dmabuf(m.data(), m.size(), export_why);
  if (!fd) {
    why = "dma-buf: " + export_why;
    return nullptr;
  }
  // iova = the device address, so SGE addresses are the slot pointers as for host memory. The
  // MR holds its own reference to the dma-buf; the fd is closed on return.
  MemoryRegion mr(ibv_reg_dmabuf_mr(pd, 0, m.size(), reinterpret_cast<std::uintptr_t>(m.data()),
                                    fd.get(), kAccess));
  if (!mr) {
    const int err = errno;
    why = "dma-buf: ibv_reg_dmabuf_mr: " + errno_text(err) +
          (err == EOPNOTSUPP || err == ENOSYS
               ? " (the kernel or the RDMA driver has no dma-buf support; needs Linux >= 5.12)"
               : "");
  }
  return mr;
}

// Without a peer-memory client ibv_reg_mr cannot pin a device pointer (EFAULT). Loading
// nvidia_peermem is no remedy on a stock kernel: its client registers through the peer-memory
// API of MLNX_OFED's / DOCA-OFED's ib_core, which the upstream kernel lacks, and without it the
// module's init just fails (NVIDIA open-gpu-kernel-modules, kernel-open/nvidia-peermem/
// nvidia-peermem.c: everything under NV_MLNX_IB_PEER_MEM_SYMBOLS_PRESENT, else -EINVAL). There,
// with Debian's rdma-core, dma-buf is the only path, and the driver exports dma-bufs only with
// its open kernel modules (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0 with the proprietary ones).
MemoryRegion try_peer_memory(ibv_pd* pd, const memory::PayloadMemory& m, std::string& why) {
  MemoryRegion mr(ibv_reg_mr(pd, m.data(), m.size(), kAccess));
  if (!mr) {
    const int err = errno;
    const bool module =
        exists("/sys/module/nvidia_peermem") || exists("/sys/kernel/mm/memory_peers/nv_mem");
    why = "peer memory: ibv_reg_mr on the device pointer: " + errno_text(err) +
          (module ? ""
                  : " (no peer-memory client loaded: nvidia_peermem works only on a kernel whose "
                    "ib_core has the peer-memory API of MLNX_OFED or DOCA-OFED; with the "
                    "distribution's kernel and rdma-core only dma-buf registers GPU memory, and "
                    "it needs NVIDIA's open kernel modules, Linux >= 5.12 and a Turing or newer "
                    "GPU)");
  }
  return mr;
}

}  // namespace

PayloadRegistration register_payload(ibv_pd* pd, const memory::PayloadMemory& memory,
                                     const std::string& what) {
  if (memory.kind() == memory::MemoryKind::host) {
    return {register_memory(pd, memory.data(), memory.size(), what), "host"};
  }
  std::string dmabuf_why;
  if (MemoryRegion mr = try_dmabuf(pd, memory, dmabuf_why)) return {std::move(mr), "dma-buf"};
  std::string peer_why;
  if (MemoryRegion mr = try_peer_memory(pd, memory, peer_why)) {
    return {std::move(mr), "peer memory"};
  }
  throw VerbsError(what + ": GPU memory cannot be registered: " + dmabuf_why + "; " + peer_why, 0);
}

namespace {

// Consumer and older data-centre GPUs expose 256 MiB of BAR1 (nvidia-smi -q -d MEMORY).
constexpr std::size_t kSmallestBar1 = std::size_t{256} << 20;

std::string mib(std::size_t bytes) {
  char text[32];
  const double b = static_cast<double>(bytes);
  if (bytes >= (std::size_t{1} << 30)) {
    std::snprintf(text, sizeof text, "%.1f GiB", b / double(1 << 30));
  } else if (bytes >= (std::size_t{1} << 20)) {
    std::snprintf(text, sizeof text, "%.1f MiB", b / double(1 << 20));
  } else {
    std::snprintf(text, sizeof text, "%.0f KiB", b / 1024.0);
  }
  return text;
}

}  // namespace

GpuRegistrationTrial::GpuRegistrationTrial(int gpu, SlabFactory make) : make_(std::move(make)) {
  if (!make_) {
    make_ = [gpu](std::size_t bytes) { return std::make_unique<memory::GpuMemory>(bytes, gpu); };
  }
}

std::size_t GpuRegistrationTrial::slabs() const noexcept {
  std::size_t n = 0;
  for (const Held& h : held_)
    n += h.mrs.size();
  return n;
}

memory::RegistrationPath GpuRegistrationTrial::add(const std::string& device,
                                                   const std::vector<std::size_t>& slab_bytes) {
  memory::RegistrationPath path;
  std::size_t i = 0;
  bool registering = false;  // the failure is a registration (not the device or the allocation)
  try {
    Held h{open_device(device), nullptr, {}, {}};
    h.pd = alloc_pd(h.ctx.get(), device);
    std::string method;
    for (; i < slab_bytes.size(); ++i) {
      h.slabs.push_back(make_(slab_bytes[i]));
      registering = true;
      PayloadRegistration reg =
          register_payload(h.pd.get(), *h.slabs.back(), "RDMA device " + device);
      registering = false;
      bytes_ += h.slabs.back()->size();
      h.mrs.push_back(std::move(reg.mr));
      method = reg.method;
    }
    held_.push_back(std::move(h));
    path.ok = true;
    path.detail = method + " (" + std::to_string(slabs()) +
                  (slabs() == 1 ? " slab, " : " slabs, ") + mib(bytes_) +
                  " registered at once, as the run will)";
  } catch (const std::exception& e) {
    path.detail = e.what();
    if (registering) {
      path.detail += " [slab " + std::to_string(slabs() + i + 1) + " of this run, " +
                     mib(slab_bytes[i]) + ", after " + mib(bytes_) + " registered";
      // The BAR1 hint only where the window can be the cause: something already holds it, or
      // this slab alone exceeds the smallest common window. A first small slab that fails
      // (seen on an H200 with a 256 GiB BAR1 and no registration path) has another cause.
      if (bytes_ > 0 || slab_bytes[i] >= kSmallestBar1) {
        path.detail +=
            ": the GPU's BAR1 window (nvidia-smi -q -d MEMORY) may be smaller than the payload "
            "memory; fewer streams, a smaller ring_depth or max_frame, or payload_memory host";
      }
      path.detail += "]";
    }
  }
  return path;
}

memory::RegistrationPath probe_gpu_registration(const std::string& device, int gpu) {
  GpuRegistrationTrial trial(gpu);
  return trial.add(device, {memory::kGpuSlabAlign});
}

void disable_cqe_scatter() {
  ::setenv("MLX5_SCATTER_TO_CQE", "0", 1);
}

}  // namespace rocecap::capture::verbs
