// Where a ring's payload slab lives. The ring only needs a base pointer, a size and the kind
// of memory (the CPU must not dereference GPU memory), so a CUDA allocation can be plugged in
// later by implementing this interface; HostMemory (host_memory.hpp) is the host one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace rocecap::capture::memory {

enum class MemoryKind : uint8_t { host, gpu };

constexpr std::string_view to_string(MemoryKind k) noexcept {
  return k == MemoryKind::host ? "host" : "gpu";
}

class PayloadMemory {
 public:
  virtual ~PayloadMemory() = default;
  virtual std::byte* data() const noexcept = 0;
  virtual std::size_t size() const noexcept = 0;
  virtual MemoryKind kind() const noexcept = 0;
};

}  // namespace rocecap::capture::memory
