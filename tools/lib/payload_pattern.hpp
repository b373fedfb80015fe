// The generator's deterministic payload: every byte is a pure function of
// (antenna, absolute frame index, byte offset in the payload), so any capture can be
// checked byte for byte without storing what was sent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace rocecap::tools {

// 8 payload bytes at a time: word k of a payload is mix(key(antenna, index) + k).
uint64_t pattern_word(uint32_t antenna, uint64_t frame_index, uint64_t word) noexcept;

// The byte at `offset` of the payload (data array, after the 64-byte CODIF header).
uint8_t pattern_byte(uint32_t antenna, uint64_t frame_index, uint64_t offset) noexcept;

// Fills `out` with payload bytes [first_offset, first_offset + out.size()).
void fill_pattern(uint32_t antenna, uint64_t frame_index, uint64_t first_offset,
                  std::span<std::byte> out) noexcept;

// Offset of the first byte of `data` that differs from the pattern starting at
// `first_offset`, or data.size() when all match.
std::size_t first_pattern_mismatch(uint32_t antenna, uint64_t frame_index, uint64_t first_offset,
                                   std::span<const std::byte> data) noexcept;

}  // namespace rocecap::tools
