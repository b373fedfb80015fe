#include "tools/lib/pulse.hpp"

#include <algorithm>
#include <utility>

#include "tools/lib/payload_pattern.hpp"

namespace rocecap::tools {

Pulse::Pulse(PulseLayout layout) : layout_(std::move(layout)) {
  for (const auto& channels : layout_.groups) {
    PulseSpan all{INT64_MAX, INT64_MIN};
    for (const PulseSpan& s : channels) {
      if (s.first >= s.end) continue;
      all.first = std::min(all.first, s.first);
      all.end = std::max(all.end, s.end);
    }
    if (all.first >= all.end) all = {};
    extent_.push_back(all);
  }
}

int64_t Pulse::frame_start(uint64_t index) const noexcept {
  // Frames before the run's first come out negative (two's complement of the difference).
  return static_cast<int64_t>(index - layout_.first_index) *
         static_cast<int64_t>(layout_.samples_per_frame);
}

bool Pulse::touches(uint32_t group, uint64_t index) const noexcept {
  if (group >= extent_.size()) return false;
  const PulseSpan& e = extent_[group];
  const int64_t first = frame_start(index);
  const int64_t end = first + static_cast<int64_t>(layout_.samples_per_frame);
  return e.first < e.end && first < e.end && e.first < end;
}

uint8_t Pulse::code(uint32_t key, uint64_t index, uint64_t offset) const noexcept {
  const unsigned n = layout_.nbits;
  if (n == 8) {
    const bool negative = (pattern_byte(key, index, offset) & 0x80) != 0;
    const int v = negative ? -kPulseAmplitude8 : kPulseAmplitude8;
    return static_cast<uint8_t>(layout_.offset_binary ? v + 128 : v);
  }
  const unsigned max_positive = (1u << (n - 1)) - 1;
  return static_cast<uint8_t>(layout_.offset_binary ? max_positive + (1u << (n - 1))
                                                    : max_positive);
}

uint8_t Pulse::apply(const std::vector<PulseSpan>& spans, uint32_t key, uint64_t index,
                     uint64_t offset, uint8_t byte) const noexcept {
  const unsigned n = layout_.nbits;
  const unsigned per_byte = 8 / n;
  const uint64_t per_sample = layout_.complex ? 2 : 1;
  const int64_t start = frame_start(index);
  for (unsigned j = 0; j < per_byte; ++j) {
    const uint64_t value = (offset * per_byte + j) / per_sample;  // sample x nchan + channel
    const PulseSpan& s = spans[value % layout_.nchan];
    const int64_t sample = start + static_cast<int64_t>(value / layout_.nchan);
    if (sample < s.first || sample >= s.end) continue;
    const auto mask = static_cast<uint8_t>(((1u << n) - 1) << (j * n));
    byte = static_cast<uint8_t>((byte & ~mask) | ((code(key, index, offset) << (j * n)) & mask));
  }
  return byte;
}

void Pulse::overlay(uint32_t group, uint32_t key, uint64_t index, uint64_t first_offset,
                    std::span<std::byte> out) const noexcept {
  if (!touches(group, index)) return;
  const auto& spans = layout_.groups[group];
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] =
        std::byte{apply(spans, key, index, first_offset + i, std::to_integer<uint8_t>(out[i]))};
  }
}

}  // namespace rocecap::tools
