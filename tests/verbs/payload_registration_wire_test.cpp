// The payload registration chain against softverbs (SOFTVERBS_DEVICES=svw=wire): host slabs
// register as host memory; without a GPU the start-up probe says why; with a GPU the chain
// tries dma-buf then peer memory, as softverbs is told the host has them (SOFTVERBS_DMABUF,
// SOFTVERBS_PEERMEM), and names both failures when it has neither. GPU tests are SKIPPED
// without a usable GPU, never passed.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "capture/memory/gpu_memory.hpp"
#include "capture/memory/host_memory.hpp"
#include "capture/verbs/payload_registration.hpp"

namespace rocecap::capture::verbs {
namespace {

constexpr const char* kDevice = "svw";

struct Pd {
  Context ctx = open_device(kDevice);
  ProtectionDomain pd = alloc_pd(ctx.get(), kDevice);
};

// softverbs reads its knobs at each registration, so each test sets its own host.
void host_offers(bool dmabuf, bool peermem) {
  ::setenv("SOFTVERBS_DMABUF", dmabuf ? "ebadf" : "eopnotsupp", 1);
  if (peermem) {
    ::setenv("SOFTVERBS_PEERMEM", "1", 1);
  } else {
    ::unsetenv("SOFTVERBS_PEERMEM");
  }
}

TEST(PayloadRegistration, HostSlabIsRegisteredAsHostMemory) {
  Pd p;
  memory::HostMemory slab(1 << 20,
                          memory::HostMemoryOptions{memory::Want::no, memory::Want::no, -1});
  const PayloadRegistration r = register_payload(p.pd.get(), slab, "test slab");
  EXPECT_EQ(r.method, "host");
  ASSERT_TRUE(r.mr);
  EXPECT_EQ(r.mr->addr, static_cast<void*>(slab.data()));
  EXPECT_EQ(r.mr->length, slab.size());
}

// softverbs asks the CUDA runtime (dlopen'ed) about unmapped ranges once peer memory is
// "loaded": an address that is neither host nor device memory still gets EFAULT.
TEST(PayloadRegistration, PeerMemoryDoesNotMakeUnmappedMemoryRegistrable) {
  host_offers(false, true);
  Pd p;
  void* unmapped = reinterpret_cast<void*>(std::uintptr_t{1} << 46);
  errno = 0;
  const int access = IBV_ACCESS_LOCAL_WRITE;  // an int: the ibv_reg_mr macro mixes enum types
  MemoryRegion mr(ibv_reg_mr(p.pd.get(), unmapped, 1 << 16, access));
  const int err = errno;
  host_offers(false, false);
  EXPECT_FALSE(mr);
  EXPECT_EQ(err, EFAULT);
}

// A GPU slab that neither path can register (an unmapped address standing in for device memory
// on a host without a peer-memory client): the error says why nvidia_peermem is no way out on
// a stock kernel (its peer-memory client needs the MLNX_OFED / DOCA-OFED ib_core) and that
// dma-buf, the one path there, needs NVIDIA's open kernel modules.
class UnmappedGpuSlab final : public memory::PayloadMemory {
 public:
  std::byte* data() const noexcept override {
    return reinterpret_cast<std::byte*>(std::uintptr_t{1} << 46);
  }
  std::size_t size() const noexcept override { return 1 << 16; }
  memory::MemoryKind kind() const noexcept override { return memory::MemoryKind::gpu; }
};

TEST(PayloadRegistration, WithoutPeerMemoryTheErrorPointsAtDmaBuf) {
  host_offers(false, false);
  Pd p;
  const UnmappedGpuSlab slab;
  try {
    register_payload(p.pd.get(), slab, "test slab");
    FAIL() << "an unmapped address registered";
  } catch (const VerbsError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("peer memory: ibv_reg_mr on the device pointer: Bad address (EFAULT)"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("nvidia_peermem works only on a kernel whose ib_core has the peer-memory "
                        "API of MLNX_OFED or DOCA-OFED"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("with the distribution's kernel and rdma-core only dma-buf registers GPU "
                        "memory, and it needs NVIDIA's open kernel modules"),
              std::string::npos)
        << what;
  }
}

TEST(NoGpuRegistration, ProbeSaysWhy) {
  const memory::GpuProbe gpu = memory::probe_gpu(0);
  if (gpu.usable) GTEST_SKIP() << "a GPU is present: " << gpu.detail;
  const memory::RegistrationPath path = probe_gpu_registration(kDevice, 0);
  EXPECT_FALSE(path.ok);
  EXPECT_NE(path.detail.find(memory::cuda_built() ? "cudaSetDevice" : "built without CUDA"),
            std::string::npos)
      << path.detail;
}

TEST(PayloadRegistration, ProbeOfAMissingDeviceNamesIt) {
  const memory::RegistrationPath path = probe_gpu_registration("nosuchdev", 0);
  EXPECT_FALSE(path.ok);
  EXPECT_NE(path.detail.find("nosuchdev"), std::string::npos) << path.detail;
}

// Host memory that reports itself as GPU memory, so that the registration chain for GPU slabs
// (dma-buf, then peer memory) runs without a GPU: dma-buf export fails (not device memory) and
// softverbs, told a peer-memory client is loaded, registers the host-mapped range.
class HostBackedGpuSlab final : public memory::PayloadMemory {
 public:
  explicit HostBackedGpuSlab(std::size_t bytes)
      : host_(bytes, memory::HostMemoryOptions{memory::Want::no, memory::Want::no, -1}) {}
  std::byte* data() const noexcept override { return host_.data(); }
  std::size_t size() const noexcept override { return host_.size(); }
  memory::MemoryKind kind() const noexcept override { return memory::MemoryKind::gpu; }

 private:
  memory::HostMemory host_;
};

std::unique_ptr<memory::PayloadMemory> host_backed(std::size_t bytes) {
  return std::make_unique<HostBackedGpuSlab>(bytes);
}

// A GPU's BAR1 window (SOFTVERBS_MR_LIMIT) holds a 64 KiB probe but not the run's slabs: the
// trial registers every slab of the real sizes at once, across devices, and fails on the first
// that does not fit, naming it; payload_memory auto then falls back to host with that reason.
TEST(PayloadRegistration, TrialOfTheRealSlabsFailsWhereTheyExceedBar1) {
  host_offers(false, true);
  ::setenv("SOFTVERBS_MR_LIMIT", "1310720", 1);  // 1.25 MiB
  constexpr std::size_t kSlab = 512 << 10;
  {
    GpuRegistrationTrial probe(0, host_backed);  // what the 64 KiB probe saw: fine
    EXPECT_TRUE(probe.add(kDevice, {64 << 10}).ok);
  }
  {
    GpuRegistrationTrial trial(0, host_backed);
    const memory::RegistrationPath first = trial.add(kDevice, {kSlab, kSlab});
    EXPECT_TRUE(first.ok) << first.detail;
    EXPECT_EQ(first.detail, "peer memory (2 slabs, 1.0 MiB registered at once, as the run will)");
    const memory::RegistrationPath second = trial.add(kDevice, {kSlab});  // a second interface
    EXPECT_FALSE(second.ok);
    EXPECT_NE(second.detail.find("peer memory: ibv_reg_mr on the device pointer: Cannot allocate "
                                 "memory (ENOMEM)"),
              std::string::npos)
        << second.detail;
    EXPECT_NE(second.detail.find("[slab 3 of this run, 512 KiB, after 1.0 MiB registered: the "
                                 "GPU's BAR1 window (nvidia-smi -q -d MEMORY) may be smaller"),
              std::string::npos)
        << second.detail;
    EXPECT_EQ(trial.slabs(), 2u);  // the failed device's slabs are released, the others held
  }                                // released: the BAR1 window is free again

  memory::PayloadFacts facts;
  facts.nic_scatters = true;
  facts.writers_stage = true;
  facts.gpu = memory::GpuProbe{true, 1, "GPU 0: Test GPU", 0};
  facts.probe_registration = [](int gpu) {
    GpuRegistrationTrial t(gpu, host_backed);
    return t.add(kDevice, {kSlab, kSlab, kSlab});
  };
  const memory::PayloadChoice c =
      memory::choose_payload_memory(memory::PayloadRequest::automatic, facts);
  ::unsetenv("SOFTVERBS_MR_LIMIT");
  host_offers(false, false);
  EXPECT_EQ(c.kind, memory::MemoryKind::host);
  EXPECT_EQ(c.reason.rfind("auto: GPU 0: Test GPU found, but the NIC cannot register GPU memory: "
                           "RDMA device svw: GPU memory cannot be registered: ",
                           0),
            0u)
      << c.reason;
  EXPECT_NE(c.reason.find("[slab 3 of this run, 512 KiB, after 1.0 MiB registered"),
            std::string::npos)
      << c.reason;
}

// Neither dma-buf nor peer memory: the first (small) slab fails for want of a path, and the
// reason must not send the operator to BAR1 (seen on an H200 whose BAR1 is 256 GiB). The device
// is named once.
TEST(PayloadRegistration, NoPathAtAllIsNotBlamedOnBar1) {
  host_offers(false, false);
  GpuRegistrationTrial trial(
      0, [](std::size_t) { return std::make_unique<UnmappedGpuSlab>(); });  // 64 KiB each
  const memory::RegistrationPath path = trial.add(kDevice, {64 << 10, 64 << 10});
  EXPECT_FALSE(path.ok);
  EXPECT_EQ(path.detail.rfind("RDMA device svw: GPU memory cannot be registered: dma-buf: ", 0), 0u)
      << path.detail;
  EXPECT_EQ(path.detail.find("RDMA device svw", 1), std::string::npos) << path.detail;
  EXPECT_NE(path.detail.find("peer memory: ibv_reg_mr on the device pointer: Bad address (EFAULT)"),
            std::string::npos)
      << path.detail;
  EXPECT_NE(path.detail.find("[slab 1 of this run, 64 KiB, after 0 KiB registered]"),
            std::string::npos)
      << path.detail;
  EXPECT_EQ(path.detail.find("BAR1"), std::string::npos) << path.detail;
}

class GpuRegistration : public ::testing::Test {
 protected:
  void SetUp() override {
    const memory::GpuProbe gpu = memory::probe_gpu(0);
    if (!gpu.usable) GTEST_SKIP() << "no usable GPU: " << gpu.detail;
  }
  void TearDown() override { host_offers(false, false); }
};

TEST_F(GpuRegistration, NeitherPathNamesBothFailures) {
  host_offers(false, false);
  Pd p;
  memory::GpuMemory slab(1 << 20, 0);
  try {
    register_payload(p.pd.get(), slab, "test slab");
    FAIL() << "GPU memory registered with neither dma-buf nor peer memory";
  } catch (const VerbsError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("test slab: GPU memory cannot be registered: dma-buf: "), std::string::npos)
        << what;
    EXPECT_NE(what.find("peer memory: ibv_reg_mr on the device pointer: Bad address (EFAULT)"),
              std::string::npos)
        << what;
  }
}

TEST_F(GpuRegistration, PeerMemoryWhenOnlyItIsLoaded) {
  host_offers(false, true);
  Pd p;
  memory::GpuMemory slab(1 << 20, 0);
  const PayloadRegistration r = register_payload(p.pd.get(), slab, "test slab");
  EXPECT_EQ(r.method, "peer memory");
  EXPECT_EQ(r.mr->length, slab.size());
  const memory::RegistrationPath path = probe_gpu_registration(kDevice, 0);
  EXPECT_TRUE(path.ok) << path.detail;
  EXPECT_EQ(path.detail, "peer memory (1 slab, 64 KiB registered at once, as the run will)");
}

TEST_F(GpuRegistration, DmaBufFirstWhenTheKernelHasIt) {
  memory::GpuMemory slab(1 << 20, 0);
  std::string why;
  if (!memory::export_dmabuf(slab.data(), slab.size(), why)) {
    GTEST_SKIP() << "this NVIDIA driver cannot export dma-bufs: " << why;
  }
  host_offers(true, true);
  Pd p;
  const PayloadRegistration r = register_payload(p.pd.get(), slab, "test slab");
  EXPECT_EQ(r.method, "dma-buf");
}

}  // namespace
}  // namespace rocecap::capture::verbs
