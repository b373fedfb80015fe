// A dispersed pulse in the generator's payload (`rocecap gen --pulse-at T`): in each channel of
// each group the samples between the pulse's arrival at the channel's top edge and its end at the
// channel's bottom edge carry a large fixed amplitude instead of the noise, so a power detector
// (or a byte scan) finds them at once. Where the pulse is, channel by channel, is decided once
// per run (tools/lib/pulse_plan.hpp) as run sample numbers [first, end); each payload byte is
// then a pure function of (group, antenna key, frame index, offset) through integer
// comparisons, so `rocecap verify` rebuilds a pulse run byte for byte from the summary.
//
// Sample components (nbits each; real: one per sample and channel, complex: I then Q) follow
// one another in time-major order (sample, then channel), packed from the least significant
// bits of each byte up (as VDIF does; 8-bit: one byte each). A pulse component is:
//   8-bit: +100 or -100, the sign that of the pattern byte it replaces (the noise's sign);
//   4-bit: +7 and 2-bit: +1, the largest positive value of the encoding.
// Encoded two's complement for CODIF, offset binary (value + 2^(nbits-1)) for VDIF: the 8-bit
// bytes are 0x64/0x9C for CODIF and 0xE4/0x1C for VDIF, 4-bit 0x7/0xF, 2-bit 0x1/0x3.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace rocecap::tools {

inline constexpr int kPulseAmplitude8 = 100;  // 8-bit pulse magnitude
// The group of a stream outside every pulse group (no pulse in its payload).
inline constexpr uint32_t kNoPulseGroup = 0xFFFF'FFFF;

// Run samples first <= n < end (n = 0: the first sample of the run's first frame).
struct PulseSpan {
  int64_t first = 0;
  int64_t end = 0;
};

struct PulseLayout {
  uint32_t nchan = 1;
  uint8_t nbits = 8;  // 2, 4 or 8
  bool complex = false;
  bool offset_binary = false;  // VDIF
  uint64_t samples_per_frame = 0;
  uint64_t first_index = 0;                    // absolute index of the run's first frame
  std::vector<std::vector<PulseSpan>> groups;  // [group][channel]
};

// Whether a pulse can be written in samples of this many bits (2, 4 or 8).
constexpr bool pulse_nbits_supported(unsigned nbits) noexcept {
  return nbits == 2 || nbits == 4 || nbits == 8;
}

class Pulse {
 public:
  Pulse() = default;
  explicit Pulse(PulseLayout layout);
  bool enabled() const noexcept { return !layout_.groups.empty(); }

  // Whether frame `index` of a stream of group `group` holds a pulse sample.
  bool touches(uint32_t group, uint64_t index) const noexcept;
  // Overwrites the pulse's components in `out`, payload bytes [first_offset, ...) of frame
  // `index`; `key` is the payload pattern's antenna key (the sign of 8-bit pulse samples).
  void overlay(uint32_t group, uint32_t key, uint64_t index, uint64_t first_offset,
               std::span<std::byte> out) const noexcept;

 private:
  uint8_t apply(const std::vector<PulseSpan>& spans, uint32_t key, uint64_t index, uint64_t offset,
                uint8_t byte) const noexcept;
  // The encoded pulse component that replaces `byte`'s sample (8-bit: sign from the pattern).
  uint8_t code(uint32_t key, uint64_t index, uint64_t offset) const noexcept;
  int64_t frame_start(uint64_t index) const noexcept;

  PulseLayout layout_;
  std::vector<PulseSpan> extent_;  // per group: the union of its channels' spans
};

}  // namespace rocecap::tools
