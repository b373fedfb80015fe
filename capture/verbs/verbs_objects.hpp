// One owning handle per libibverbs object. Each is a unique_ptr whose deleter calls the
// matching destroy function, so every object dies exactly once, in reverse order of creation
// when held as members in creation order (flow before QP, QP before CQ and MRs, those before
// the PD, the PD before the context). Creation helpers throw VerbsError naming the object,
// the device and errno: they run at start-up only.
#pragma once

#include <infiniband/verbs.h>

#include <memory>
#include <stdexcept>
#include <string>

namespace rocecap::capture::verbs {

class VerbsError : public std::runtime_error {
 public:
  VerbsError(const std::string& what, int err);
  int error() const noexcept { return err_; }

 private:
  int err_;
};

template <class T, auto Destroy>
struct Deleter {
  void operator()(T* p) const noexcept {
    if (p != nullptr) (void)Destroy(p);
  }
};

using DeviceList = std::unique_ptr<ibv_device*, Deleter<ibv_device*, ibv_free_device_list>>;
using Context = std::unique_ptr<ibv_context, Deleter<ibv_context, ibv_close_device>>;
using ProtectionDomain = std::unique_ptr<ibv_pd, Deleter<ibv_pd, ibv_dealloc_pd>>;
using CompChannel =
    std::unique_ptr<ibv_comp_channel, Deleter<ibv_comp_channel, ibv_destroy_comp_channel>>;
using MemoryRegion = std::unique_ptr<ibv_mr, Deleter<ibv_mr, ibv_dereg_mr>>;
using QueuePair = std::unique_ptr<ibv_qp, Deleter<ibv_qp, ibv_destroy_qp>>;

// ibv_destroy_flow is static inline in verbs.h, so it cannot be a template argument directly.
struct FlowDeleter {
  void operator()(ibv_flow* f) const noexcept {
    if (f != nullptr) (void)ibv_destroy_flow(f);
  }
};
using Flow = std::unique_ptr<ibv_flow, FlowDeleter>;

// An extended CQ is destroyed through its ibv_cq view.
struct CqExDeleter {
  void operator()(ibv_cq_ex* cq) const noexcept {
    if (cq != nullptr) (void)ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
  }
};
using CompletionQueue = std::unique_ptr<ibv_cq_ex, CqExDeleter>;

// Opens the device called `name` ("mlx5_0", or a softverbs name).
Context open_device(const std::string& name);
ProtectionDomain alloc_pd(ibv_context* ctx, const std::string& device);
CompChannel create_comp_channel(ibv_context* ctx, const std::string& device);
// Registers host memory for the NIC to write (LOCAL_WRITE only: nothing remote touches it).
MemoryRegion register_memory(ibv_pd* pd, void* addr, std::size_t bytes, const std::string& what);

}  // namespace rocecap::capture::verbs
