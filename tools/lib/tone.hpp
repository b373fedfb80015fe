// A test tone in the generator's payload (`rocecap gen --tone F`): 8-bit samples of a sinusoid
// at F cycles per sample in one channel, on top of low-level noise taken from the payload
// pattern, so a quick look (`rocecap quicklook`) has a known spectral line to find and every
// byte is still a pure function of (antenna, frame index, offset): `rocecap verify` checks a
// tone run byte for byte like any other.
//
// Payload layout (CODIF and VDIF alike, as their readers unpack it): time samples one after the
// other, each holding the channels in order, each channel one byte (real) or two (complex: I
// then Q). Bytes are two's complement for CODIF and offset binary (value + 128) for VDIF.
//
// The phase is an exact 32-bit fixed-point accumulator over the absolute sample number
// (frame index x samples per frame + sample), and the sinusoid a 256-entry table computed at
// compile time, so gen and verify on any host produce the same bytes (no libm in the path).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "tools/lib/gen_summary.hpp"

namespace rocecap::tools {

inline constexpr int kToneAmplitude = 40;  // peak value; the noise spans -16..15

struct ToneLayout {
  double cycles_per_sample = 0;  // 0: no tone
  uint16_t channel = 0;
  uint32_t nchan = 1;
  bool complex = false;
  bool offset_binary = false;  // VDIF
  uint64_t samples_per_frame = 0;
};

// Checks --tone and --tone-channel against the frame parameters; throws std::invalid_argument
// naming the option. Nothing to check without a tone.
void check_tone(const GenFrameParams& p);

class Tone {
 public:
  Tone() = default;
  explicit Tone(const ToneLayout& layout) noexcept;
  bool enabled() const noexcept { return step_ != 0; }

  // Payload bytes [first_offset, first_offset + out.size()) of frame `index`; `key` is the
  // payload pattern's antenna key (the noise).
  void fill(uint32_t key, uint64_t index, uint64_t first_offset,
            std::span<std::byte> out) const noexcept;
  // Offset into `data` of its first byte that differs, data.size() when all match.
  std::size_t first_mismatch(uint32_t key, uint64_t index, uint64_t first_offset,
                             std::span<const std::byte> data) const noexcept;
  uint8_t byte_at(uint32_t key, uint64_t index, uint64_t offset) const noexcept;

 private:
  // The tone's part of the value at that offset (no noise, no encoding).
  int tone_value(uint64_t index, uint64_t offset) const noexcept;

  ToneLayout layout_;
  uint32_t step_ = 0;  // cycles per sample x 2^32
};

}  // namespace rocecap::tools
