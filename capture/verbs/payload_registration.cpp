#include "capture/verbs/payload_registration.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>

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

MemoryRegion try_dmabuf(ibv_pd* pd, const PayloadMemory& m, std::string& why) {
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

MemoryRegion try_peer_memory(ibv_pd* pd, const PayloadMemory& m, std::string& why) {
  MemoryRegion mr(ibv_reg_mr(pd, m.data(), m.size(), kAccess));
  if (!mr) {
    const int err = errno;
    const bool module =
        exists("/sys/module/nvidia_peermem") || exists("/sys/kernel/mm/memory_peers/nv_mem");
    why = "peer memory: ibv_reg_mr on the device pointer: " + errno_text(err) +
          (module ? "" : " (no peer-memory module: nvidia_peermem is not loaded)");
  }
  return mr;
}

}  // namespace

PayloadRegistration register_payload(ibv_pd* pd, const PayloadMemory& memory,
                                     const std::string& what) {
  if (memory.kind() == MemoryKind::host) {
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

memory::RegistrationPath probe_gpu_registration(const std::string& device, int gpu) {
  memory::RegistrationPath path;
  try {
    const Context ctx = open_device(device);
    const ProtectionDomain pd = alloc_pd(ctx.get(), device);
    const memory::GpuMemory probe(memory::kGpuSlabAlign, gpu);
    const PayloadRegistration reg = register_payload(pd.get(), probe, "RDMA device " + device);
    path.ok = true;
    path.detail = reg.method;
  } catch (const std::exception& e) {
    path.detail = e.what();
  }
  return path;
}

void disable_cqe_scatter() {
  ::setenv("MLX5_SCATTER_TO_CQE", "0", 1);
}

}  // namespace rocecap::capture::verbs
