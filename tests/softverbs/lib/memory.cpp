// Protection domains and memory registration. Registration pins pages on real hardware, so a
// range that is not fully backed by accessible host mappings fails with EFAULT, which is also
// what a CUDA device pointer gets without a peer-memory client.
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "sv.hpp"

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

namespace sv {
namespace {

// True when [addr, addr+len) is covered by mappings that are readable (and writable if asked).
bool host_mapped(uintptr_t addr, size_t len, bool need_write) {
  FILE* f = fopen("/proc/self/maps", "re");
  if (!f) return false;
  uintptr_t want = addr;
  const uintptr_t end = addr + len;
  char line[512];
  while (want < end && fgets(line, sizeof line, f)) {
    uintptr_t lo = 0, hi = 0;
    char perms[5] = {};
    if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %4s", &lo, &hi, perms) != 3) continue;
    if (hi <= want || lo > want) continue;
    if (perms[0] != 'r' || (need_write && perms[1] != 'w')) break;
    want = hi;
  }
  fclose(f);
  return want >= end;
}

Mr* new_mr(Pd* pd, uint64_t iova, uint64_t length, uint8_t* host, unsigned access) {
  auto* m = new Mr;
  m->box.self = m;
  m->pd = pd;
  m->addr = iova;
  m->length = length;
  m->host = host;
  m->access = access;
  ibv_mr& mr = m->box.mr;
  mr.context = pd->box.pd.context;
  mr.pd = &pd->box.pd;
  mr.addr = host;
  mr.length = length;
  mr.lkey = allocate_key();
  mr.rkey = mr.lkey;
  mr.handle = mr.lkey >> 8;
  pd->users.fetch_add(1);
  return m;
}

// SOFTVERBS_MR_LIMIT=<bytes>: the most memory the registrations of this process may cover at
// once; one beyond it fails with ENOMEM. It models a GPU's BAR1 window filling up: dma-buf and
// peer-memory (nvidia_peermem) registrations both map GPU memory through BAR1, whose size
// (often 256 MiB) is far below the device memory. Without a GPU softverbs cannot tell device
// from host memory, so the limit covers every registration. The errno is a guess (the NVIDIA
// P2P and dma-buf paths report a failed BAR1 mapping as -ENOMEM as far as we can tell; not
// verified on hardware). Read at each registration.
std::atomic<uint64_t> g_registered{0};

bool reserve(uint64_t bytes) {
  const char* v = getenv("SOFTVERBS_MR_LIMIT");
  const uint64_t limit = v != nullptr ? strtoull(v, nullptr, 0) : 0;
  uint64_t now = g_registered.load();
  do {
    if (limit != 0 && now + bytes > limit) return false;
  } while (!g_registered.compare_exchange_weak(now, now + bytes));
  return true;
}

bool valid_access(unsigned access) {
  // Remote write/atomic need local write, as the kernel insists.
  const unsigned remote = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
  return !(access & remote) || (access & IBV_ACCESS_LOCAL_WRITE);
}

}  // namespace
}  // namespace sv

using namespace sv;

extern "C" {

ibv_pd* ibv_alloc_pd(ibv_context* ic) {
  auto* p = new Pd;
  p->box.self = p;
  p->ctx = ctx_of(ic);
  p->box.pd.context = ic;
  p->box.pd.handle = allocate_key() >> 8;
  return &p->box.pd;
}

int ibv_dealloc_pd(ibv_pd* pd) {
  Pd* p = pd_of(pd);
  if (p->users.load() != 0) return EBUSY;
  delete p;
  return 0;
}

ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned access) {
  if (!valid_access(access) || length == 0) {
    errno = EINVAL;
    return nullptr;
  }
  bool device = false;
  if (!host_mapped(reinterpret_cast<uintptr_t>(addr), length, access & IBV_ACCESS_LOCAL_WRITE)) {
    // GPU memory registers only through a peer-memory client (nvidia_peermem), as on hardware.
    device = peer_memory_loaded() && is_device_pointer(addr);
    if (!device) {
      errno = EFAULT;
      return nullptr;
    }
  }
  if (!reserve(length)) {
    errno = ENOMEM;
    return nullptr;
  }
  Pd* p = pd_of(pd);
  Mr* m = new_mr(p, iova, length, static_cast<uint8_t*>(addr), access);
  m->device = device;
  Device* dev = p->ctx->dev;
  std::lock_guard<std::mutex> g(dev->mu);  // publishes the MR to the receive engine
  dev->mrs[m->box.mr.lkey] = m;
  return &m->box.mr;
}

ibv_mr* ibv_reg_mr_iova(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
  return ibv_reg_mr_iova2(pd, addr, length, iova, static_cast<unsigned>(access));
}

ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  return ibv_reg_mr_iova2(pd, addr, length, reinterpret_cast<uintptr_t>(addr),
                          static_cast<unsigned>(access));
}

ibv_mr* ibv_reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd,
                          int access) {
  if (!dmabuf_supported()) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  if (fd < 0) {
    errno = EBADF;
    return nullptr;
  }
  if (!reserve(length)) {
    errno = ENOMEM;
    return nullptr;
  }
  // A mappable fd (a memfd standing in for a dma-buf exporter) becomes the MR's backing store.
  void* map =
      mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(offset));
  if (map == MAP_FAILED && errno != EBADF && is_device_pointer(reinterpret_cast<void*>(iova))) {
    // A CUDA dma-buf cannot be mapped by the CPU, and the fd does not say which device range it
    // exports; rocecap registers with iova = the device address, so that is taken as the target.
    Mr* m = new_mr(pd_of(pd), iova, length, reinterpret_cast<uint8_t*>(iova),
                   static_cast<unsigned>(access));
    m->device = true;
    Device* dev = pd_of(pd)->ctx->dev;
    std::lock_guard<std::mutex> g(dev->mu);
    dev->mrs[m->box.mr.lkey] = m;
    return &m->box.mr;
  }
  if (map == MAP_FAILED) {
    const int err = errno == EBADF ? EBADF : EINVAL;
    g_registered.fetch_sub(length);
    errno = err;
    return nullptr;
  }
  Mr* m =
      new_mr(pd_of(pd), iova, length, static_cast<uint8_t*>(map), static_cast<unsigned>(access));
  m->dmabuf_map = map;
  m->dmabuf_len = length;
  m->box.mr.addr = reinterpret_cast<void*>(iova);
  Device* dev = pd_of(pd)->ctx->dev;
  std::lock_guard<std::mutex> g(dev->mu);
  dev->mrs[m->box.mr.lkey] = m;
  return &m->box.mr;
}

int ibv_dereg_mr(ibv_mr* mr) {
  Mr* m = mr_of(mr);
  Device* dev = m->pd->ctx->dev;
  {
    // The engine validates SGEs under this lock, so it never sees a half-freed MR.
    std::lock_guard<std::mutex> g(dev->mu);
    m->pd->users.fetch_sub(1);
    dev->mrs.erase(m->box.mr.lkey);
  }
  // WRs still naming this lkey complete with IBV_WC_LOC_PROT_ERR, as on hardware.
  if (m->dmabuf_map) munmap(m->dmabuf_map, m->dmabuf_len);
  g_registered.fetch_sub(m->length);
  delete m;
  return 0;
}

}  // extern "C"
