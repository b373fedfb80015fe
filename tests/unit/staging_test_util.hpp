// Test doubles for GPU staging without a GPU:
// - ProtectedGpuMemory: payload memory that says it is GPU memory and is really host pages the
//   test can make unreadable (PROT_NONE), so any CPU read of a payload slot outside the copy
//   engine crashes the test instead of passing unnoticed;
// - ProtectingEngine: the host engine, lifting that protection only for its own copies;
// - DeferredEngine: copies nothing until a fence is waited for, and tells the test when
//   (on_complete), so a sink or release that comes too early is seen.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "capture/memory/payload_memory.hpp"
#include "writers/staging/host_copy_engine.hpp"

namespace rocecap::writers::test {

class ProtectedGpuMemory final : public capture::memory::PayloadMemory {
 public:
  explicit ProtectedGpuMemory(std::size_t bytes) {
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    size_ = (bytes + page - 1) / page * page;
    void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("mmap for fake GPU memory");
    data_ = static_cast<std::byte*>(p);
  }
  ~ProtectedGpuMemory() override { munmap(data_, size_); }
  ProtectedGpuMemory(const ProtectedGpuMemory&) = delete;
  ProtectedGpuMemory& operator=(const ProtectedGpuMemory&) = delete;

  std::byte* data() const noexcept override { return data_; }
  std::size_t size() const noexcept override { return size_; }
  capture::memory::MemoryKind kind() const noexcept override {
    return capture::memory::MemoryKind::gpu;
  }

  // The "device" side (producer, copy engine) opens it; the CPU side closes it.
  void open() const { protect(PROT_READ | PROT_WRITE); }
  void close() const { protect(PROT_NONE); }

 private:
  void protect(int prot) const {
    if (mprotect(data_, size_, prot) != 0) throw std::runtime_error("mprotect fake GPU memory");
  }
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

class ProtectingEngine final : public staging::HostCopyEngine {
 public:
  explicit ProtectingEngine(const std::vector<const ProtectedGpuMemory*>& memory)
      : memory_(memory) {}
  bool copy_2d(unsigned lane, const staging::Copy2D& c) noexcept override {
    for (const auto* m : memory_)
      m->open();
    const bool ok = HostCopyEngine::copy_2d(lane, c);
    for (const auto* m : memory_)
      m->close();
    return ok;
  }

 private:
  std::vector<const ProtectedGpuMemory*> memory_;
};

// Records every call in `log` ("copy<lane> rows<n>", "fence<lane>", "wait<lane>") and performs
// a lane's copies only when its fence is waited for. fail_copies makes every copy_2d fail.
class DeferredEngine final : public staging::HostCopyEngine {
 public:
  std::vector<std::string>* log = nullptr;
  std::function<void(unsigned lane, std::size_t rows)> on_complete;
  bool fail_copies = false;

  bool copy_2d(unsigned lane, const staging::Copy2D& c) noexcept override {
    note("copy" + std::to_string(lane) + " rows" + std::to_string(c.rows));
    if (fail_copies || lane >= kLanes) return false;
    pending_[lane].push_back(c);
    return true;
  }
  bool record_fence(unsigned lane) noexcept override {
    note("fence" + std::to_string(lane));
    return lane < kLanes;
  }
  staging::FenceState query_fence(unsigned lane) noexcept override {
    if (lane >= kLanes) return staging::FenceState::failed;
    return pending_[lane].empty() ? staging::FenceState::done : staging::FenceState::pending;
  }
  bool wait_fence(unsigned lane) noexcept override {
    note("wait" + std::to_string(lane));
    if (lane >= kLanes) return false;
    std::size_t rows = 0;
    for (const auto& c : pending_[lane]) {
      staging::copy_rows(c);
      rows += c.rows;
    }
    pending_[lane].clear();
    if (on_complete) on_complete(lane, rows);
    return true;
  }

 private:
  void note(const std::string& s) {
    if (log != nullptr) log->push_back(s);
  }
  std::vector<staging::Copy2D> pending_[kLanes];
};

}  // namespace rocecap::writers::test
