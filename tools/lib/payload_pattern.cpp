#include "tools/lib/payload_pattern.hpp"

#include <bit>
#include <cstring>

namespace rocecap::tools {
namespace {

// splitmix64's finaliser: cheap, and every input bit affects every output bit.
constexpr uint64_t mix(uint64_t z) noexcept {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

constexpr uint64_t key(uint32_t antenna, uint64_t frame_index) noexcept {
  return mix((uint64_t{antenna} << 48) ^ frame_index ^ 0x9E3779B97F4A7C15ULL);
}

}  // namespace

uint64_t pattern_word(uint32_t antenna, uint64_t frame_index, uint64_t word) noexcept {
  return mix(key(antenna, frame_index) + word * 0x9E3779B97F4A7C15ULL);
}

uint8_t pattern_byte(uint32_t antenna, uint64_t frame_index, uint64_t offset) noexcept {
  return static_cast<uint8_t>(pattern_word(antenna, frame_index, offset / 8) >> (8 * (offset % 8)));
}

void fill_pattern(uint32_t antenna, uint64_t frame_index, uint64_t first_offset,
                  std::span<std::byte> out) noexcept {
  const uint64_t k = key(antenna, frame_index);
  std::size_t i = 0;
  // Unaligned head, byte by byte, then whole little-endian words.
  for (; i < out.size() && (first_offset + i) % 8 != 0; ++i) {
    out[i] = std::byte{pattern_byte(antenna, frame_index, first_offset + i)};
  }
  // One 8-byte store per word: the byte-by-byte little-endian split this replaces was not
  // merged into a store by GCC 12 at -O2 and cost ~6x more; it was 60 % of `rocecap gen`'s
  // CPU time (perf record, BENCHMARKS.md "Kernel path"), the bound on the generator's rate.
  for (; i + 8 <= out.size(); i += 8) {
    uint64_t w = mix(k + ((first_offset + i) / 8) * 0x9E3779B97F4A7C15ULL);
    if constexpr (std::endian::native == std::endian::big) w = __builtin_bswap64(w);
    std::memcpy(out.data() + i, &w, 8);
  }
  for (; i < out.size(); ++i) {
    out[i] = std::byte{pattern_byte(antenna, frame_index, first_offset + i)};
  }
}

std::size_t first_pattern_mismatch(uint32_t antenna, uint64_t frame_index, uint64_t first_offset,
                                   std::span<const std::byte> data) noexcept {
  std::byte expect[256];
  for (std::size_t done = 0; done < data.size();) {
    const std::size_t n = data.size() - done < sizeof expect ? data.size() - done : sizeof expect;
    fill_pattern(antenna, frame_index, first_offset + done, std::span<std::byte>(expect, n));
    if (std::memcmp(expect, data.data() + done, n) != 0) {
      for (std::size_t j = 0; j < n; ++j) {
        if (expect[j] != data[done + j]) return done + j;
      }
    }
    done += n;
  }
  return data.size();
}

}  // namespace rocecap::tools
