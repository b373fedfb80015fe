// The CUDA copy engine. With a GPU: payloads written into device memory come back through the
// stager byte-exact (runs, a wrap, several batches). Without one (no driver, or a build without
// CUDA) those tests report SKIPPED; what can be checked there is that asking for GPU staging
// fails loudly, naming the cause, instead of silently copying nothing.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "staging_test_util.hpp"
#include "writer_test_util.hpp"
#include "writers/staging/engine_factory.hpp"
#include "writers/staging/payload_stager.hpp"

#ifdef ROCECAP_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "writers/staging/cuda/cuda_copy_engine.hpp"
#endif

namespace rocecap::writers::staging {
namespace {

int gpus() {
#ifdef ROCECAP_HAVE_CUDA
  return cuda_device_count();
#else
  return 0;
#endif
}

#ifdef ROCECAP_HAVE_CUDA
class DeviceMemory final : public capture::memory::PayloadMemory {
 public:
  explicit DeviceMemory(std::size_t bytes) : size_(bytes) {
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) throw std::runtime_error("cudaMalloc");
    data_ = static_cast<std::byte*>(p);
  }
  ~DeviceMemory() override { (void)cudaFree(data_); }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  std::byte* data() const noexcept override { return data_; }
  std::size_t size() const noexcept override { return size_; }
  capture::memory::MemoryKind kind() const noexcept override {
    return capture::memory::MemoryKind::gpu;
  }

 private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};
#endif

TEST(CudaCopyEngine, StagesDevicePayloadsByteExact) {
  if (gpus() == 0) GTEST_SKIP() << "no CUDA device (or built without CUDA)";
#ifdef ROCECAP_HAVE_CUDA
  capture::RingConfig c;
  c.slots = 16;
  c.payload_slot_bytes = 8000;  // stride 8000 (a multiple of 64)
  c.memory =
      capture::memory::HostMemoryOptions{capture::memory::Want::no, capture::memory::Want::no};
  capture::StreamRing ring(
      c, std::make_unique<DeviceMemory>(capture::StreamRing::payload_bytes_needed(c)));
  std::vector<test::Bytes> want;
  std::vector<StageItem> items;
  for (capture::SlotId id : {12u, 13u, 14u, 15u, 0u, 1u, 2u, 7u}) {
    want.push_back(test::pattern(id == 7 ? 5000 : 8000, id));
    ASSERT_EQ(cudaMemcpy(ring.payload(id).data(), want.back().data(), want.back().size(),
                         cudaMemcpyHostToDevice),
              cudaSuccess);
    ring.meta(id).payload_bytes = static_cast<uint32_t>(want.back().size());
    items.push_back({&ring, id, 0});
  }
  StagingOptions o;
  o.buffer_bytes = 3 * 8000;  // several batches: both lanes in use
  PayloadStager stager(std::make_unique<CudaCopyEngine>(), ring.payload_stride(), o);
  std::vector<test::Bytes> got;
  std::vector<bool> oks;
  // On another thread than the one that built the engine, as the writer thread does.
  std::thread writer([&] {
    stager.stage(items, [&](const StageItem&, std::span<const std::byte> p, bool ok) {
      oks.push_back(ok);
      got.emplace_back(p.begin(), p.end());
    });
  });
  writer.join();
  EXPECT_EQ(oks, std::vector<bool>(items.size(), true)) << stager.engine().last_error();
  EXPECT_EQ(got, want);
  EXPECT_EQ(stager.stats().bytes_copied, 7u * 8000 + 5000);
  EXPECT_EQ(stager.stats().copy_errors, 0u) << stager.engine().last_error();
  EXPECT_GE(stager.stats().batches, 3u);
#endif
}

TEST(CudaCopyEngine, GpuStagingWithoutADeviceFailsNamingTheCause) {
  if (gpus() != 0) GTEST_SKIP() << "a CUDA device is present: the refusal cannot be shown";
  try {
    (void)make_copy_engine(capture::memory::MemoryKind::gpu);
    FAIL() << "a GPU copy engine was made without a GPU";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    if (cuda_engine_built()) {
      // The CUDA runtime's own error, by name: "cudaGetDevice: cudaErrorNoDevice (...)".
      EXPECT_TRUE(std::regex_search(
          what, std::regex(R"(cuda copy engine: cudaGetDevice: cudaError\w+ \(.+\))")))
          << what;
    } else {
      EXPECT_NE(what.find("built without CUDA"), std::string::npos) << what;
    }
  }
}

TEST(CudaCopyEngine, HostEngineIsMadeForHostMemory) {
  const auto e = make_copy_engine(capture::memory::MemoryKind::host);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->describe(), "host memcpy");
}

}  // namespace
}  // namespace rocecap::writers::staging
