#include "writers/staging/host_copy_engine.hpp"

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

namespace rocecap::writers::staging {
namespace {

constexpr std::size_t kAlign = 4096;

void release_host(std::byte* p) noexcept {
  std::free(p);
}

}  // namespace

void copy_rows(const Copy2D& c) noexcept {
  for (std::size_t r = 0; r < c.rows; ++r)
    std::memcpy(c.dst + r * c.dst_pitch, c.src + r * c.src_pitch, c.width);
}

PinnedBuffer HostCopyEngine::allocate_pinned(std::size_t bytes) {
  const std::size_t size = (bytes + kAlign - 1) / kAlign * kAlign;
  void* p = nullptr;
  if (size == 0 || posix_memalign(&p, kAlign, size) != 0) {
    throw std::runtime_error("staging buffer: posix_memalign of " + std::to_string(size) +
                             " bytes failed");
  }
  std::memset(p, 0, size);
  return PinnedBuffer(static_cast<std::byte*>(p), size, &release_host);
}

bool HostCopyEngine::copy_2d(unsigned lane, const Copy2D& c) noexcept {
  if (lane >= kLanes) return false;
  copy_rows(c);
  return true;
}

}  // namespace rocecap::writers::staging
