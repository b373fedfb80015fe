// Device-to-host staging throughput: packed 8 KB frames through the PayloadStager (strided 2D
// copies of slot runs, two pinned buffers) against one large contiguous copy of the same bytes
// in the same run (cudaMemcpy into pinned memory; memcpy for the host engine).
//
//   staging_bench                 CUDA engine; without a GPU it says so and exits 0
//   staging_bench --engine host   the same measurement with the memcpy engine (any host)
// Options: --frames N (default 8192), --frame-bytes B (8192), --slot-bytes S (9000: the slot
// stride is S rounded up to 64), --buffer-bytes K (4 MiB per staging buffer), --passes P (20).
// Results and the commands used go in BENCHMARKS.md.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "capture/memory/host_memory.hpp"
#include "capture/stream_ring.hpp"
#include "writers/staging/host_copy_engine.hpp"
#include "writers/staging/payload_stager.hpp"

#ifdef ROCECAP_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "writers/staging/cuda/cuda_copy_engine.hpp"
#endif

namespace {

using rocecap::capture::RingConfig;
using rocecap::capture::SlotId;
using rocecap::capture::StreamRing;
using rocecap::capture::memory::MemoryKind;
using rocecap::capture::memory::PayloadMemory;
namespace staging = rocecap::writers::staging;

struct Options {
  std::string engine = "cuda";
  uint32_t frames = 8192;
  uint32_t frame_bytes = 8192;
  uint32_t slot_bytes = 9000;
  std::size_t buffer_bytes = std::size_t{4} << 20;
  int passes = 20;
};

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const char* v = argv[i + 1];
    if (k == "--engine") {
      o.engine = v;
    } else if (k == "--frames") {
      o.frames = static_cast<uint32_t>(std::strtoul(v, nullptr, 10));
    } else if (k == "--frame-bytes") {
      o.frame_bytes = static_cast<uint32_t>(std::strtoul(v, nullptr, 10));
    } else if (k == "--slot-bytes") {
      o.slot_bytes = static_cast<uint32_t>(std::strtoul(v, nullptr, 10));
    } else if (k == "--buffer-bytes") {
      o.buffer_bytes = std::strtoull(v, nullptr, 10);
    } else if (k == "--passes") {
      o.passes = std::atoi(v);
    } else {
      return false;
    }
  }
  return (argc % 2 == 1) && (o.engine == "cuda" || o.engine == "host") && o.frames > 0 &&
         o.frame_bytes > 0 && o.slot_bytes >= o.frame_bytes && o.passes > 0;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Median of the per-pass times, in GB/s for `bytes` per pass.
double median_gbps(std::vector<double> times, double bytes) {
  std::sort(times.begin(), times.end());
  return bytes / times[times.size() / 2] / 1e9;
}

#ifdef ROCECAP_HAVE_CUDA
class DeviceMemory final : public PayloadMemory {
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
  MemoryKind kind() const noexcept override { return MemoryKind::gpu; }

 private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};
#endif

struct Setup {
  std::unique_ptr<StreamRing> ring;
  std::unique_ptr<staging::CopyEngine> engine;
  std::unique_ptr<PayloadMemory> block;  // the contiguous source for the one-block copy
};

Setup make_setup(const Options& o, const RingConfig& rc) {
  Setup s;
  const std::size_t block_bytes = std::size_t{o.frames} * o.frame_bytes;
  if (o.engine == "host") {
    s.ring = std::make_unique<StreamRing>(rc);
    s.engine = std::make_unique<staging::HostCopyEngine>();
    s.block = std::make_unique<rocecap::capture::memory::HostMemory>(block_bytes, rc.memory);
    return s;
  }
#ifdef ROCECAP_HAVE_CUDA
  s.ring = std::make_unique<StreamRing>(
      rc, std::make_unique<DeviceMemory>(StreamRing::payload_bytes_needed(rc)));
  s.engine = std::make_unique<staging::CudaCopyEngine>();
  s.block = std::make_unique<DeviceMemory>(block_bytes);
#endif
  return s;
}

// One copy of the whole block into `dst` (pinned for CUDA), timed.
double one_block_copy(const Options& o, const Setup& s, std::byte* dst) {
  const std::size_t bytes = std::size_t{o.frames} * o.frame_bytes;
  const auto t0 = std::chrono::steady_clock::now();
#ifdef ROCECAP_HAVE_CUDA
  if (o.engine == "cuda") {
    (void)cudaMemcpy(dst, s.block->data(), bytes, cudaMemcpyDeviceToHost);
    return seconds_since(t0);
  }
#endif
  std::memcpy(dst, s.block->data(), bytes);
  return seconds_since(t0);
}

int run(const Options& o) {
  RingConfig rc;
  rc.slots = o.frames;
  rc.payload_slot_bytes = o.slot_bytes;
  rc.memory.huge_pages = rocecap::capture::memory::Want::prefer;
  rc.memory.lock = rocecap::capture::memory::Want::no;
  Setup s = make_setup(o, rc);
  for (SlotId id = 0; id < rc.slots; ++id)
    s.ring->meta(id).payload_bytes = o.frame_bytes;
  // The writer's view of a pass: every slot, starting mid-ring so the run wraps once.
  std::vector<staging::StageItem> items(o.frames);
  for (uint32_t k = 0; k < o.frames; ++k)
    items[k] = {s.ring.get(), (k + o.frames / 2) % o.frames, 0};

  staging::StagingOptions so;
  so.buffer_bytes = o.buffer_bytes;
  staging::PayloadStager stager(std::move(s.engine), s.ring->payload_stride(), so);
  staging::PinnedBuffer big =
      stager.engine().allocate_pinned(std::size_t{o.frames} * o.frame_bytes);

  std::vector<double> staged_t, block_t;
  uint64_t sink_sum = 0;  // reads one byte per frame, as a writer would touch the data
  for (int p = 0; p < o.passes + 1; ++p) {
    const auto t0 = std::chrono::steady_clock::now();
    stager.stage(items, [&](const staging::StageItem&, std::span<const std::byte> b, bool) {
      sink_sum += b.empty() ? 0 : static_cast<uint64_t>(b[0]);
    });
    const double st = seconds_since(t0);
    const double bt = one_block_copy(o, s, big.data());
    if (p == 0) continue;  // warm-up: first touch of the pinned pages
    staged_t.push_back(st);
    block_t.push_back(bt);
  }
  const double bytes = double(o.frames) * o.frame_bytes;
  std::printf("engine: %s\n", stager.engine().describe().c_str());
  std::printf("frames %u x %u B (slot stride %zu B), staging buffer %zu B x 2, %d passes\n",
              o.frames, o.frame_bytes, s.ring->payload_stride(), stager.buffer_bytes(), o.passes);
  std::printf("packed staging (2D copies, %llu per pass): %.2f GB/s (median)\n",
              static_cast<unsigned long long>(stager.stats().copies / uint64_t(o.passes + 1)),
              median_gbps(staged_t, bytes));
  std::printf("one large copy of the same bytes:        %.2f GB/s (median)\n",
              median_gbps(block_t, bytes));
  std::printf("staging lag max %.3f ms, copy errors %llu (checksum %llu)\n",
              double(stager.stats().lag_ns_max) / 1e6,
              static_cast<unsigned long long>(stager.stats().copy_errors),
              static_cast<unsigned long long>(sink_sum));
  return stager.stats().copy_errors == 0 ? 0 : 1;
}

bool cuda_available(std::string& why) {
#ifdef ROCECAP_HAVE_CUDA
  if (staging::cuda_device_count() > 0) return true;
  why = "no CUDA device or driver on this host";
#else
  why = "this build has no CUDA (ROCECAP_WITH_CUDA)";
#endif
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: staging_bench [--engine cuda|host] [--frames N] [--frame-bytes B] "
                 "[--slot-bytes S>=B] [--buffer-bytes K] [--passes P]\n");
    return 2;
  }
  std::string why;
  if (o.engine == "cuda" && !cuda_available(why)) {
    std::printf(
        "staging_bench: GPU staging not measured: %s. GPU numbers need a GPU host; "
        "`staging_bench --engine host` measures the host engine.\n",
        why.c_str());
    return 0;
  }
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "staging_bench: %s\n", e.what());
    return 1;
  }
}
