// The CopyEngine for payload slabs in CUDA device memory: page-locked staging buffers
// (cudaHostAlloc), strided copies with cudaMemcpy2DAsync on one non-blocking stream, one event
// per lane as its fence. Built only where the CUDA toolkit is (ROCECAP_HAVE_CUDA); the CUDA
// runtime is linked statically and reaches the driver only at run time, so the binary still
// starts on hosts without one (the libcuda stub is never linked).
//
// GPUDirect RDMA: the NIC writes payloads straight into device memory. Where the device does
// not order those writes before its own later work (cudaDevAttrGPUDirectRDMAWritesOrdering is
// none), flush_gpudirect_writes() calls cudaDeviceFlushGPUDirectRDMAWrites before the copies of
// a pass are queued; where it does, the flush is skipped.
#pragma once

#include <string>
#include <thread>

#include "writers/staging/copy_engine.hpp"

struct CUstream_st;
struct CUevent_st;

namespace rocecap::writers::staging {

class CudaCopyEngine final : public CopyEngine {
 public:
  static constexpr unsigned kLanes = 2;

  // Binds `device` (-1: the calling thread's current one) and creates the stream and the
  // events. Throws std::runtime_error naming the CUDA call and its error.
  explicit CudaCopyEngine(int device = -1);
  ~CudaCopyEngine() override;
  CudaCopyEngine(const CudaCopyEngine&) = delete;
  CudaCopyEngine& operator=(const CudaCopyEngine&) = delete;

  PinnedBuffer allocate_pinned(std::size_t bytes) override;
  unsigned lanes() const noexcept override { return kLanes; }
  bool flush_gpudirect_writes() noexcept override;
  bool copy_2d(unsigned lane, const Copy2D& c) noexcept override;
  bool record_fence(unsigned lane) noexcept override;
  FenceState query_fence(unsigned lane) noexcept override;
  bool wait_fence(unsigned lane) noexcept override;
  std::string last_error() const override { return last_error_; }
  std::string describe() const override;

  // Whether flush_gpudirect_writes() calls the runtime (false: the device orders the writes
  // itself, or offers no flush).
  bool flushes() const noexcept { return flush_; }

 private:
  bool ok(int err, const char* call) noexcept;
  // The CUDA runtime's current device is per thread, and the writer thread is not the thread
  // that built the engine: the first call on a new thread makes device_ current there.
  bool bind() noexcept;
  void destroy() noexcept;

  int device_ = 0;
  bool flush_ = false;
  bool flush_supported_ = false;
  bool ordered_ = false;
  std::thread::id bound_;
  CUstream_st* stream_ = nullptr;
  CUevent_st* fences_[kLanes] = {};
  std::string last_error_;
};

// Devices the CUDA runtime sees; 0 without a driver or GPU (never throws).
int cuda_device_count() noexcept;

}  // namespace rocecap::writers::staging
