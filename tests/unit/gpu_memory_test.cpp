// The CUDA layer on this host. Without a GPU (or without CUDA in the build) the probe and
// every call say why, naming the CUDA call or the build; those tests are SKIPPED on a GPU host.
// With a GPU: slabs are 64 KiB aligned and sized, hold bytes copied in and out, and plug into
// a StreamRing as GPU payload memory; those tests are SKIPPED (never passed) without one.
#include "capture/memory/gpu_memory.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <numeric>
#include <regex>
#include <string>
#include <vector>

#include "capture/memory/cuda_runtime.hpp"
#include "capture/stream_ring.hpp"

namespace rocecap::capture::memory {
namespace {

std::string expected_no_gpu_cause() {
  return cuda_built() ? "cudaGetDeviceCount: " : "built without CUDA";
}

TEST(NoGpu, ProbeSaysWhyNamingTheCall) {
  const GpuProbe p = probe_gpu(0);
  if (p.usable) GTEST_SKIP() << "a GPU is present: " << p.detail;
  EXPECT_EQ(p.devices, 0);
  EXPECT_EQ(p.detail.rfind(expected_no_gpu_cause(), 0), 0u) << p.detail;
}

// A driver older than the one the statically linked runtime needs (CUDA minor version
// compatibility: 11.x from branch 450, 12.x from 525, 13.x from 580) answers
// cudaErrorInsufficientDriver; the reason then says which driver this build needs.
TEST(NoGpu, InsufficientDriverNamesTheDriverThisBuildNeeds) {
  const GpuProbe p = probe_gpu(0);
  if (p.usable || p.detail.find("(cudaErrorInsufficientDriver)") == std::string::npos)
    GTEST_SKIP() << "not cudaErrorInsufficientDriver here: " << p.detail;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(p.detail, m,
                                std::regex(R"(this build's CUDA (\d+)\.\d+ runtime needs an )"
                                           R"(NVIDIA driver of branch (\d+) or later)")))
      << p.detail;
  const int major = std::stoi(m[1].str());
  const int branch = std::stoi(m[2].str());
  EXPECT_EQ(branch, major >= 13 ? 580 : major == 12 ? 525 : 450) << p.detail;
}

TEST(NoGpu, AllocationAndExportFailWithTheReason) {
  if (probe_gpu(0).usable) GTEST_SKIP() << "a GPU is present";
  try {
    GpuMemory m(1 << 20, 0);
    FAIL() << "GpuMemory allocated without a usable GPU";
  } catch (const CudaError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(cuda_built() ? "(GPU 0, " : "built without CUDA"), std::string::npos)
        << what;
  }
  std::string why;
  int host = 0;
  EXPECT_FALSE(export_dmabuf(&host, sizeof host, why));
  EXPECT_FALSE(why.empty());
  why.clear();
  EXPECT_FALSE(copy_to_host(&host, &host, sizeof host, why));
  EXPECT_FALSE(why.empty());
}

// With the CUDA runtime in the build and no usable device (no driver, a driver older than the
// runtime, or no GPU), every entry point fails with the CUDA runtime's error by name, the same
// one the probe reports (cudaErrorNoDevice, cudaErrorInsufficientDriver, ...): never a crash,
// never a silent success, never an error without its cause.
TEST(NoGpu, EveryEntryPointFailsWithTheCudaError) {
  if (!cuda_built()) GTEST_SKIP() << "built without CUDA";
  const GpuProbe p = probe_gpu(0);
  if (p.usable) GTEST_SKIP() << "a GPU is present: " << p.detail;
  std::smatch m;
  ASSERT_TRUE(std::regex_match(p.detail, m,
                               std::regex(R"(cudaGetDeviceCount: .+? \((cudaError\w+)\)(: .*)?)")))
      << p.detail;
  const std::string err = std::string("(").append(m[1].str()).append(")");
  const auto names = [&err](const std::string& call, const std::string& what) {
    EXPECT_EQ(what.rfind(call + ": ", 0), 0u) << what;
    EXPECT_NE(what.find(err), std::string::npos) << what << " lacks " << err;
  };
  try {
    GpuMemory g(1 << 20, 0);
    ADD_FAILURE() << "GpuMemory allocated without a usable GPU";
  } catch (const CudaError& e) {
    names("cudaSetDevice", e.what());
  }
  std::string why;
  int host[4] = {};
  EXPECT_FALSE(export_dmabuf(host, sizeof host, why));
  names("cudaPointerGetAttributes", why);
  EXPECT_FALSE(copy_to_host(host, host + 2, 4, why));
  names("cudaMemcpy", why);
  EXPECT_FALSE(copy_to_device(host, host + 2, 4, why));
  names("cudaMemcpy", why);
  EXPECT_FALSE(fill_device(host, 0, 4, why));
  names("cudaMemset", why);
}

TEST(NoGpu, OwnedFdIsClosedOnce) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  {
    DmaBufFd a(fds[0]);
    DmaBufFd b(std::move(a));
    EXPECT_FALSE(a);
    EXPECT_EQ(b.get(), fds[0]);
  }
  EXPECT_EQ(close(fds[0]), -1);  // closed by b, and only by b
  EXPECT_EQ(errno, EBADF);
  close(fds[1]);
}

class WithGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    const GpuProbe p = probe_gpu(0);
    if (!p.usable) GTEST_SKIP() << "no usable GPU: " << p.detail;
  }
};

TEST_F(WithGpu, SlabIsAlignedSizedAndHoldsBytes) {
  GpuMemory m(100'000, 0);
  EXPECT_EQ(m.kind(), MemoryKind::gpu);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(m.data()) % kGpuSlabAlign, 0u);
  EXPECT_EQ(m.size(), 2 * kGpuSlabAlign);
  std::vector<uint8_t> in(m.size()), out(m.size(), 0);
  std::iota(in.begin(), in.end(), uint8_t{7});
  std::string why;
  ASSERT_TRUE(copy_to_device(m.data(), in.data(), in.size(), why)) << why;
  ASSERT_TRUE(copy_to_host(out.data(), m.data(), out.size(), why)) << why;
  EXPECT_EQ(in, out);
  ASSERT_TRUE(fill_device(m.data(), 0, m.size(), why)) << why;
  ASSERT_TRUE(copy_to_host(out.data(), m.data(), out.size(), why)) << why;
  EXPECT_EQ(std::count(out.begin(), out.end(), 0), static_cast<long>(out.size()));
}

TEST_F(WithGpu, RingTakesGpuPayloadMemory) {
  RingConfig c;
  c.slots = 64;
  c.payload_slot_bytes = 8000;
  c.payload_align = 4096;
  c.memory.huge_pages = Want::no;
  c.memory.lock = Want::no;
  StreamRing ring(c, std::make_unique<GpuMemory>(StreamRing::payload_bytes_needed(c), 0));
  EXPECT_EQ(ring.payload_kind(), MemoryKind::gpu);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(ring.payload(1).data()) % 4096, 0u);
}

TEST_F(WithGpu, DmaBufExportGivesAnFdOrSaysWhy) {
  GpuMemory m(kGpuSlabAlign, 0);
  std::string why;
  const DmaBufFd fd = export_dmabuf(m.data(), m.size(), why);
  if (!fd) GTEST_SKIP() << "dma-buf export not available here: " << why;
  EXPECT_GE(fd.get(), 0);
}

}  // namespace
}  // namespace rocecap::capture::memory
