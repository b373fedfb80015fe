// The payload registration chain against softverbs (SOFTVERBS_DEVICES=svw=wire): host slabs
// register as host memory; without a GPU the start-up probe says why; with a GPU the chain
// tries dma-buf then peer memory, as softverbs is told the host has them (SOFTVERBS_DMABUF,
// SOFTVERBS_PEERMEM), and names both failures when it has neither. GPU tests are SKIPPED
// without a usable GPU, never passed.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "capture/host_memory.hpp"
#include "capture/memory/gpu_memory.hpp"
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
  HostMemory slab(1 << 20, HostMemoryOptions{Want::no, Want::no, -1});
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
  EXPECT_EQ(path.detail, "peer memory");
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
