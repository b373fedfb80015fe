#include "tools/lib/tone.hpp"

#include <array>
#include <cmath>
#include <stdexcept>
#include <string>

#include "tools/lib/payload_pattern.hpp"

namespace rocecap::tools {
namespace {

constexpr double kPi = 3.14159265358979323846;

// cos(x) for |x| <= pi by its Taylor series: evaluated by the compiler, the same on every host.
constexpr double cos_series(double x) {
  double term = 1, sum = 1;
  for (int k = 1; k < 40; ++k) {
    term *= -x * x / ((2.0 * k - 1) * (2.0 * k));
    sum += term;
  }
  return sum;
}

constexpr int round_half_away(double v) {
  return v >= 0 ? static_cast<int>(v + 0.5) : -static_cast<int>(-v + 0.5);
}

constexpr std::array<int8_t, 256> make_cos_table() {
  std::array<int8_t, 256> t{};
  for (int k = 0; k < 256; ++k) {
    double x = 2 * kPi * k / 256;
    if (x > kPi) x -= 2 * kPi;
    t[k] = static_cast<int8_t>(round_half_away(kToneAmplitude * cos_series(x)));
  }
  return t;
}

constexpr std::array<int8_t, 256> kCos = make_cos_table();
static_assert(kCos[0] == kToneAmplitude && kCos[64] == 0 && kCos[128] == -kToneAmplitude);

[[noreturn]] void bad(const std::string& what) {
  throw std::invalid_argument(what);
}

}  // namespace

void check_tone(const GenFrameParams& p) {
  if (p.tone == 0) {
    if (p.tone_channel != 0) bad("--tone-channel: needs --tone");
    return;
  }
  if (p.nbits != 8) bad("--tone: needs --nbits 8 (the tone is written as 8-bit samples)");
  const double limit = 0.5;
  if (!(std::abs(p.tone) < limit) || (!p.complex && p.tone < 0)) {
    bad("--tone: " + std::to_string(p.tone) +
        (p.complex ? " is not between -0.5 and 0.5 cycles per sample"
                   : " is not between 0 and 0.5 cycles per sample (real samples; "
                     "--complex for negative frequencies)"));
  }
  if (p.tone_channel >= p.nchan) {
    bad("--tone-channel: " + std::to_string(p.tone_channel) + " is not below --nchan " +
        std::to_string(p.nchan));
  }
}

Tone::Tone(const ToneLayout& layout) noexcept : layout_(layout) {
  if (layout.cycles_per_sample == 0 || layout.samples_per_frame == 0) return;
  // Two's complement of a negative frequency is the same phase step modulo 2^32.
  step_ = static_cast<uint32_t>(std::llround(layout.cycles_per_sample * 4294967296.0));
}

int Tone::tone_value(uint64_t index, uint64_t offset) const noexcept {
  const uint64_t per_value = layout_.complex ? 2 : 1;
  const uint64_t slot = offset / per_value;
  if (slot % layout_.nchan != layout_.channel) return 0;
  const uint64_t n = index * layout_.samples_per_frame + slot / layout_.nchan;
  const auto phase = static_cast<uint32_t>(n * step_);
  // Q is sin(x) = cos(x - pi/2): a quarter of the table back.
  const auto q = static_cast<uint8_t>((phase >> 24) - (offset % per_value == 1 ? 64 : 0));
  return kCos[q];
}

uint8_t Tone::byte_at(uint32_t key, uint64_t index, uint64_t offset) const noexcept {
  const int noise = static_cast<int8_t>(pattern_byte(key, index, offset)) >> 3;
  const int v = noise + tone_value(index, offset);
  return static_cast<uint8_t>(layout_.offset_binary ? v + 128 : v);
}

void Tone::fill(uint32_t key, uint64_t index, uint64_t first_offset,
                std::span<std::byte> out) const noexcept {
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = std::byte{byte_at(key, index, first_offset + i)};
}

std::size_t Tone::first_mismatch(uint32_t key, uint64_t index, uint64_t first_offset,
                                 std::span<const std::byte> data) const noexcept {
  for (std::size_t i = 0; i < data.size(); ++i) {
    if (std::to_integer<uint8_t>(data[i]) != byte_at(key, index, first_offset + i)) return i;
  }
  return data.size();
}

}  // namespace rocecap::tools
