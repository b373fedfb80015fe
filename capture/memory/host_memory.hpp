// Page-aligned host memory mapped once (RAII), optionally on huge pages and locked in RAM.
// It is a memfd mapped shared, so that consumers can map the same pages read-only.
//
// Capture slabs are touched by the NIC and the capture thread at line rate, so they are
// prefaulted at construction (MAP_POPULATE): no page fault ever happens on the hot path.
// Huge pages cut TLB misses but need pages reserved by the administrator, and mlock needs
// CAP_IPC_LOCK or a large RLIMIT_MEMLOCK; both can therefore be asked for as "prefer" (fall
// back and say so through huge_pages()/locked() and the errno) or "require" (throw).
// With a NUMA node the pages are bound (preferred) to it before they are first touched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "capture/memory/payload_memory.hpp"

namespace rocecap::capture::memory {

enum class Want : uint8_t { no, prefer, require };

struct HostMemoryOptions {
  Want huge_pages = Want::prefer;
  Want lock = Want::prefer;
  // Preferred NUMA node (the NIC's, from /sys/class/net/<if>/device/numa_node), -1 for the
  // kernel's default. A refusal (no such node, seccomp) is recorded, never fatal.
  int numa_node = -1;
};

inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;  // x86-64 default size

class HostMemory final : public PayloadMemory {
 public:
  // Maps at least `bytes` (rounded up to the page size in use). Throws std::system_error
  // naming the call and the size when mmap fails, or when a `require`d feature is refused.
  HostMemory(std::size_t bytes, const HostMemoryOptions& options);
  ~HostMemory() override;
  HostMemory(const HostMemory&) = delete;
  HostMemory& operator=(const HostMemory&) = delete;

  std::byte* data() const noexcept override { return data_; }
  std::size_t size() const noexcept override { return size_; }
  MemoryKind kind() const noexcept override { return MemoryKind::host; }

  bool huge_pages() const noexcept { return huge_pages_; }
  bool locked() const noexcept { return locked_; }
  int huge_pages_errno() const noexcept { return huge_errno_; }  // 0 unless the try failed
  int lock_errno() const noexcept { return lock_errno_; }        // 0 unless mlock failed
  int numa_errno() const noexcept { return numa_errno_; }        // 0 unless mbind failed
  // The memfd behind the mapping (owned here): reopened read-only for consumers. Sealed once
  // mapped (host_memory.cpp seal()): no other writable mapping of it can be made.
  int fd() const noexcept { return fd_; }
  int seal_errno() const noexcept { return seal_errno_; }  // 0 unless sealing failed
  // One line for the log: "4.0 MiB, huge pages: no (ENOMEM), locked: yes".
  std::string describe() const;

 private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  int fd_ = -1;
  int seal_errno_ = 0;
  bool huge_pages_ = false;
  bool locked_ = false;
  int huge_errno_ = 0;
  int lock_errno_ = 0;
  int numa_errno_ = 0;
};

}  // namespace rocecap::capture::memory
