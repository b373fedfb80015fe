// VDIF header codec against hand-assembled words (doc/vdif.md bit positions), validation
// reasons, the timeline (index, at_index, start time) and the VTP sequence number.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "capture/vdif/header.hpp"

namespace rocecap::capture::vdif {
namespace {

using Words = std::array<uint32_t, 8>;

std::array<std::byte, kHeaderBytes> to_bytes(const Words& w) {
  std::array<std::byte, kHeaderBytes> b{};
  for (std::size_t i = 0; i < w.size(); ++i) {
    for (std::size_t k = 0; k < 4; ++k)
      b[4 * i + k] = static_cast<std::byte>((w[i] >> (8 * k)) & 0xFF);
  }
  return b;
}

// Every field at a distinct value filling its width, so a shifted or narrowed range shows.
Header full(bool flags) {
  Header h;
  h.invalid = flags;
  h.legacy = false;
  h.seconds = 0x2ABC'DEF1;  // 30 bits
  h.epoch = 0x2D;           // 6 bits
  h.unassigned = 2;
  h.frame = 0xA1'B2C3;  // 24 bits
  h.version = 5;
  h.log2_nchan = 0x13;
  h.frame_words = 0xC4'D5E6;
  h.complex = !flags;
  h.nbits = 27;  // stored 26
  h.thread_id = 0x2A5;
  h.station_id = 0x4142;  // "AB"
  h.edv = 0x9C;
  h.extended = {0x12'3456, 0x789A'BCDE, 0xF012'3456, 0x0BAD'F00D};
  return h;
}

Words words_of(const Header& h) {
  return {(h.invalid ? 1u << 31 : 0u) | (h.legacy ? 1u << 30 : 0u) | h.seconds,
          (uint32_t{h.unassigned} << 30) | (uint32_t{h.epoch} << 24) | h.frame,
          (uint32_t{h.version} << 29) | (uint32_t{h.log2_nchan} << 24) | h.frame_words,
          (h.complex ? 1u << 31 : 0u) | (uint32_t(h.nbits - 1) << 26) |
              (uint32_t{h.thread_id} << 16) | h.station_id,
          (uint32_t{h.edv} << 24) | h.extended[0],
          h.extended[1],
          h.extended[2],
          h.extended[3]};
}

TEST(VdifHeader, DecodesEveryFieldAtItsBits) {
  for (bool flags : {false, true}) {
    const Header want = full(flags);
    Header got;
    ASSERT_TRUE(decode(to_bytes(words_of(want)), got));
    EXPECT_EQ(got, want);
  }
}

TEST(VdifHeader, EncodesEveryFieldAtItsBits) {
  for (bool flags : {false, true}) {
    std::array<std::byte, kHeaderBytes> out{};
    encode(full(flags), out);
    EXPECT_EQ(out, to_bytes(words_of(full(flags))));
  }
}

TEST(VdifHeader, LegacyHeaderIsSixteenBytes) {
  Header h = full(false);
  h.legacy = true;
  h.edv = 0;
  h.extended = {};
  std::array<std::byte, kHeaderBytes> out;
  out.fill(std::byte{0x77});
  encode(h, out);
  for (std::size_t i = kLegacyHeaderBytes; i < kHeaderBytes; ++i)
    EXPECT_EQ(out[i], std::byte{0x77}) << "byte " << i << " written";
  Header got;
  // 16 bytes suffice for a legacy header, and words 4-7 are not read.
  ASSERT_TRUE(decode(std::span<const std::byte>(out).first(kLegacyHeaderBytes), got));
  EXPECT_EQ(got, h);
  EXPECT_EQ(got.header_bytes(), kLegacyHeaderBytes);
  EXPECT_FALSE(decode(std::span<const std::byte>(out).first(15), got));
  h.legacy = false;
  encode(h, out);
  EXPECT_FALSE(decode(std::span<const std::byte>(out).first(31), got));
}

Header small(uint32_t frame_words = 4 + 1000) {
  Header h;
  h.frame_words = frame_words;  // 32-byte header + 8000 data bytes
  h.nbits = 2;
  h.log2_nchan = 2;  // 4 channels: 8 bits per sample set, 8000 samples per frame
  h.epoch = 51;      // 2025-07-01
  h.seconds = 100;
  return h;
}

TEST(VdifHeader, ValidateNamesEachReason) {
  Timing t;
  const Rate fps{.frames_per_second = 25'000};
  EXPECT_EQ(validate(small(), 8032, fps, t), Invalid::ok);
  EXPECT_EQ(t.frames_per_second, 25'000u);
  EXPECT_EQ(t.samples_per_frame, 8000u);
  EXPECT_EQ(validate(small(), 8040, fps, t), Invalid::size_mismatch);  // length field lying
  EXPECT_EQ(validate(small(4), 32, fps, t), Invalid::short_frame);
  EXPECT_EQ(validate(small(0), 0, fps, t), Invalid::short_frame);
  Header h = small();
  h.frame = 25'000;
  EXPECT_EQ(validate(h, 8032, fps, t), Invalid::frame_out_of_range);
  h.frame = 24'999;
  EXPECT_EQ(validate(h, 8032, fps, t), Invalid::ok);
  // From a sample rate: 200 MS/s / 8000 samples = 25000 frames per second.
  EXPECT_EQ(validate(small(), 8032, Rate{.sample_rate = 200'000'000}, t), Invalid::ok);
  EXPECT_EQ(t.frames_per_second, 25'000u);
  EXPECT_EQ(validate(small(), 8032, Rate{.sample_rate = 200'000'001}, t), Invalid::fractional_rate);
  h = small();
  h.nbits = 3;  // 8000 x 8 bits / 12 bits per sample set: not whole
  EXPECT_EQ(validate(h, 8032, Rate{.sample_rate = 1'000'000}, t), Invalid::fractional_samples);
  EXPECT_EQ(validate(h, 8032, fps, t), Invalid::ok);  // a given rate needs no sample count
  // Version 0 (VDIF 1.0) and 1 (what writers use: baseband, DiFX tools, rocecap gen) are VDIF;
  // 2 to 7 name no layout anyone defined: a frame of one is not taken for VDIF.
  for (uint8_t version : {0, 1}) {
    h = small();
    h.version = version;
    EXPECT_EQ(validate(h, 8032, fps, t), Invalid::ok) << int{version};
  }
  for (uint8_t version = 2; version < 8; ++version) {
    h = small();
    h.version = version;
    EXPECT_EQ(to_string(validate(h, 8032, fps, t)), "vdif_version") << int{version};
  }
  std::set<std::string> names;
  for (std::size_t i = 0; i < kInvalidCount; ++i)
    names.insert(std::string(to_string(static_cast<Invalid>(i))));
  EXPECT_EQ(names.size(), kInvalidCount);
  EXPECT_EQ(names.count("unknown"), 0u);
}

TEST(VdifHeader, TimelineCrossesSecondsAndKeepsFields) {
  const Timing t{.samples_per_frame = 8000, .frames_per_second = 25'000};
  Header h = full(false);
  h.seconds = 1000;
  h.frame = 24'999;
  const uint64_t i = absolute_index(h, t);
  EXPECT_EQ(i, 1000u * 25'000 + 24'999);
  const Header next = at_index(h, t, i + 1);
  EXPECT_EQ(next.seconds, 1001u);
  EXPECT_EQ(next.frame, 0u);
  Header same = next;
  same.seconds = h.seconds;
  same.frame = h.frame;
  EXPECT_EQ(same, h);  // nothing but time changed
  // Epoch 50 = 2025-01-01T00:00:00Z = 1735689600; frame 12500 of 25000 = half a second.
  h.epoch = 50;
  h.seconds = 3;
  h.frame = 12'500;
  EXPECT_EQ(frame_start_unix_ns(h, t), (1'735'689'600 + 3) * 1'000'000'000LL + 500'000'000);
}

TEST(VdifHeader, VtpSequenceIsLittleEndian) {
  std::array<std::byte, kVtpBytes> b{};
  put_vtp_sequence(0x0102'0304'0506'0708ull, b);
  EXPECT_EQ(b[0], std::byte{0x08});
  EXPECT_EQ(b[7], std::byte{0x01});
  EXPECT_EQ(vtp_sequence(b), 0x0102'0304'0506'0708ull);
}

}  // namespace
}  // namespace rocecap::capture::vdif
