#include "capture/verbs/verbs_objects.hpp"

#include <cerrno>
#include <cstring>

namespace rocecap::capture::verbs {

VerbsError::VerbsError(const std::string& what, int err)
    : std::runtime_error(what + (err != 0 ? std::string(": ") + std::strerror(err) : "")),
      err_(err) {}

Context open_device(const std::string& name) {
  int n = 0;
  DeviceList list(ibv_get_device_list(&n));
  if (!list) {
    throw VerbsError("RDMA device " + name + ": no RDMA devices (ibv_get_device_list)", errno);
  }
  std::string seen;
  for (int i = 0; i < n; ++i) {
    const char* dev = ibv_get_device_name(list.get()[i]);
    if (name == dev) {
      Context ctx(ibv_open_device(list.get()[i]));
      if (!ctx) throw VerbsError("RDMA device " + name + ": ibv_open_device", errno);
      return ctx;
    }
    seen += seen.empty() ? dev : std::string(", ") + dev;
  }
  throw VerbsError("RDMA device " + name +
                       " not found (devices: " + (seen.empty() ? std::string("none") : seen) + ")",
                   0);
}

ProtectionDomain alloc_pd(ibv_context* ctx, const std::string& device) {
  ProtectionDomain pd(ibv_alloc_pd(ctx));
  if (!pd) throw VerbsError("RDMA device " + device + ": ibv_alloc_pd", errno);
  return pd;
}

CompChannel create_comp_channel(ibv_context* ctx, const std::string& device) {
  CompChannel ch(ibv_create_comp_channel(ctx));
  if (!ch) throw VerbsError("RDMA device " + device + ": ibv_create_comp_channel", errno);
  return ch;
}

MemoryRegion register_memory(ibv_pd* pd, void* addr, std::size_t bytes, const std::string& what) {
  // A non-constant access value keeps the ibv_reg_mr macro on ibv_reg_mr_iova2.
  const unsigned access = IBV_ACCESS_LOCAL_WRITE;
  MemoryRegion mr(ibv_reg_mr(pd, addr, bytes, static_cast<int>(access)));
  if (!mr) {
    const int err = errno;
    throw VerbsError(what + ": ibv_reg_mr of " + std::to_string(bytes) + " bytes" +
                         (err == ENOMEM ? " (raise the memlock limit: LimitMEMLOCK=infinity)" : ""),
                     err);
  }
  return mr;
}

}  // namespace rocecap::capture::verbs
