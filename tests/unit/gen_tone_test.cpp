// `rocecap gen --tone`: the tone is the sinusoid asked for (compared with std::cos computed
// here, independently of the generator's fixed-point table), its power is in the asked channel
// and frequency, the bytes are stable across versions (a golden hash: recordings are checked by
// `rocecap verify` of another version), and bad options are refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <numbers>
#include <vector>

#include "tools/lib/gen_frame.hpp"
#include "tools/lib/payload_pattern.hpp"

namespace rocecap::tools {
namespace {

GenFrameParams tone_params(double f) {
  GenFrameParams p;
  p.payload_bytes = 4096;
  p.nbits = 8;
  p.nchan = 1;
  p.total_samples = 0;  // 10000 frames per period, as `rocecap gen` defaults
  p.tone = f;
  return p;
}

std::vector<std::byte> payload(const FrameBuilder& b, uint32_t antenna, uint64_t index) {
  std::vector<std::byte> frame(b.frame_bytes());
  const std::size_t n = b.build(antenna, index, Fate::plain, frame);
  return {frame.begin() + capture::codif::kHeaderBytes, frame.begin() + static_cast<long>(n)};
}

// Without the noise (which comes from the pattern), each sample is round(40 cos(2 pi f n)):
// n the absolute sample number, phase kept to 1/256 of a turn, so within 1 of the exact value.
TEST(GenTone, SamplesAreTheAskedSinusoidOverPatternNoise) {
  const double f = 0.15625;
  const FrameBuilder b(tone_params(f));
  const uint64_t index = b.first_index() + 7;
  const auto data = payload(b, 2, index);
  const uint64_t spf = b.timing().samples_per_frame;
  ASSERT_EQ(spf, 4096u);
  int worst = 0;
  for (std::size_t i = 0; i < data.size(); ++i) {
    const int noise = static_cast<int8_t>(pattern_byte(2, index, i)) >> 3;
    ASSERT_GE(noise, -16);
    ASSERT_LE(noise, 15);
    const int tone = static_cast<int8_t>(std::to_integer<uint8_t>(data[i])) - noise;
    const double n = static_cast<double>(index * spf + i);
    const double want = 40 * std::cos(2 * std::numbers::pi * std::fmod(f * n, 1.0));
    worst = std::max(worst, static_cast<int>(std::lround(std::abs(tone - want) + 0.49)));
  }
  EXPECT_LE(worst, 1);
}

// The DFT of one frame's samples peaks at bin f x N, far above every other bin.
TEST(GenTone, PowerPeaksAtTheToneFrequency) {
  const FrameBuilder b(tone_params(0.15625));
  const auto data = payload(b, 0, b.first_index());
  const std::size_t n = 256;
  std::vector<double> power(n / 2);
  for (std::size_t k = 0; k < n / 2; ++k) {
    std::complex<double> acc;
    for (std::size_t t = 0; t < n; ++t) {
      const double x = static_cast<int8_t>(std::to_integer<uint8_t>(data[t]));
      acc += x * std::polar(1.0, -2 * std::numbers::pi * double(k * t) / double(n));
    }
    power[k] = std::norm(acc);
  }
  const std::size_t peak = std::max_element(power.begin(), power.end()) - power.begin();
  EXPECT_EQ(peak, 40u);  // 0.15625 x 256
  for (std::size_t k = 1; k < power.size(); ++k) {
    if (k == peak) continue;
    EXPECT_LT(power[k] * 100, power[peak]) << "bin " << k;
  }
}

// Only the tone channel carries it; complex samples put sin in Q (a positive frequency).
TEST(GenTone, OnlyItsChannelAndQuadratureInComplex) {
  GenFrameParams p = tone_params(0.125);
  p.nchan = 4;
  p.complex = true;
  p.tone_channel = 2;
  const FrameBuilder b(p);
  const auto data = payload(b, 1, b.first_index());
  for (std::size_t t = 0; t < 8; ++t) {
    for (std::size_t c = 0; c < 4; ++c) {
      for (std::size_t q = 0; q < 2; ++q) {
        const std::size_t off = (t * 4 + c) * 2 + q;
        const int noise = static_cast<int8_t>(pattern_byte(1, b.first_index(), off)) >> 3;
        const int v = static_cast<int8_t>(std::to_integer<uint8_t>(data[off])) - noise;
        const double ph = 2 * std::numbers::pi * 0.125 * double(t);
        const double want = c != 2 ? 0 : 40 * (q == 0 ? std::cos(ph) : std::sin(ph));
        EXPECT_NEAR(v, want, 1.0) << "t " << t << " channel " << c << " q " << q;
      }
    }
  }
}

// VDIF samples are offset binary: the same tone + noise, plus 128.
TEST(GenTone, VdifIsOffsetBinary) {
  GenFrameParams p = tone_params(0.25);
  p.format = "vdif";
  p.frames_per_second = 1000;
  const FrameBuilder b(p);
  std::vector<std::byte> frame(b.frame_bytes());
  b.build(0, 0, 5, 0, Fate::plain, frame);
  const std::byte* data = frame.data() + 32;
  for (std::size_t i = 0; i < 16; ++i) {
    const int noise = static_cast<int8_t>(pattern_byte(0, 5, i)) >> 3;
    const double want = 40 * std::cos(2 * std::numbers::pi * 0.25 * double(5 * 4096 + i));
    EXPECT_NEAR(std::to_integer<int>(data[i]) - 128 - noise, want, 1.0) << i;
  }
}

uint64_t fnv1a(std::span<const std::byte> b) {
  uint64_t h = 1469598103934665603ULL;
  for (std::byte x : b) {
    h ^= std::to_integer<uint8_t>(x);
    h *= 1099511628211ULL;
  }
  return h;
}

// Golden bytes: taken from the first build of --tone and checked against the sinusoid above.
// Any change to the tone's bytes (table, phase, noise, layout) fails here.
TEST(GenTone, BytesAreStableAcrossVersions) {
  const FrameBuilder b(tone_params(0.15625));
  const auto data = payload(b, 3, 12345);
  EXPECT_EQ(fnv1a(data), 0x6c5fbb8360123d46ULL);
}

// verify compares tone payloads through the same builder: a byte off is found at its offset.
TEST(GenTone, MismatchIsFoundAtItsOffset) {
  const FrameBuilder b(tone_params(0.3));
  auto data = payload(b, 1, 99);
  EXPECT_EQ(b.first_payload_mismatch(1, 99, 0, data), data.size());
  data[1000] ^= std::byte{1};
  EXPECT_EQ(b.first_payload_mismatch(1, 99, 0, data), 1000u);
  EXPECT_EQ(b.first_payload_mismatch(1, 99, 500, std::span(data).subspan(500)), 500u);
}

TEST(GenTone, BadOptionsAreRefusedByName) {
  auto refused = [](GenFrameParams p) -> std::string {
    try {
      FrameBuilder b(p);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "accepted";
  };
  GenFrameParams p = tone_params(0.6);
  EXPECT_NE(refused(p).find("--tone: "), std::string::npos) << refused(p);
  p = tone_params(-0.1);
  EXPECT_NE(refused(p).find("--complex for negative"), std::string::npos) << refused(p);
  p = tone_params(0.1);
  p.nbits = 4;
  EXPECT_NE(refused(p).find("needs --nbits 8"), std::string::npos) << refused(p);
  p = tone_params(0.1);
  p.tone_channel = 1;
  EXPECT_NE(refused(p).find("--tone-channel: 1 is not below --nchan 1"), std::string::npos)
      << refused(p);
  p = tone_params(0);
  p.tone_channel = 1;
  EXPECT_NE(refused(p).find("--tone-channel: needs --tone"), std::string::npos) << refused(p);
}

}  // namespace
}  // namespace rocecap::tools
