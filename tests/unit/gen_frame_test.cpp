#include "tools/lib/gen_frame.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <span>
#include <stdexcept>
#include <vector>

#include "tools/lib/payload_pattern.hpp"

namespace rocecap::tools {
namespace {

GenFrameParams params() {
  GenFrameParams p;
  p.payload_bytes = 8192;
  p.nchan = 4;
  p.nbits = 8;
  p.complex = true;
  p.period = 5;
  p.total_samples = 0;  // default
  p.epoch = 52;
  p.start_seconds = 100;
  p.start_frame = 7;
  p.thread_id = 20;
  p.group_id = 3;
  p.station = "AT";
  return p;
}

std::string error_of(const GenFrameParams& p) {
  try {
    FrameBuilder b(p);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(GenFrame, DefaultTotalSamplesGiveTenThousandFramesPerPeriod) {
  const FrameBuilder b(params());
  const uint64_t spf = 8192 * 8 / (4 * 8 * 2);
  EXPECT_EQ(b.timing().samples_per_frame, spf);
  EXPECT_EQ(b.timing().frames_per_period, 10000u);
  EXPECT_EQ(b.params().total_samples, 10000 * spf);
  EXPECT_EQ(b.first_index(), (100 / 5) * 10000u + 7);
}

TEST(GenFrame, PlainFrameDecodesWithEveryFieldAndThePattern) {
  const FrameBuilder b(params());
  std::vector<std::byte> buf(b.frame_bytes());
  const uint64_t index = b.first_index() + 12345;  // crosses into the next period
  ASSERT_EQ(b.build(2, index, Fate::plain, buf), 64u + 8192);
  capture::codif::Header h;
  ASSERT_TRUE(capture::codif::decode(std::span<const std::byte>(buf),
                                     capture::codif::SyncSet::defaults(), h));
  capture::codif::Timing t;
  ASSERT_EQ(capture::codif::validate(h, buf.size(), t), capture::codif::Invalid::ok);
  EXPECT_EQ(capture::codif::absolute_index(h, t), index);
  EXPECT_EQ(h.seconds, 105u);  // period 5: index 212352 = period 21, frame 2352
  EXPECT_EQ(h.frame, 2352u);
  EXPECT_EQ(h.thread_id, 22);
  EXPECT_EQ(h.group_id, 3);
  EXPECT_EQ(h.station_id, capture::codif::station_id('A', 'T'));
  EXPECT_EQ(h.epoch, 52);
  EXPECT_EQ(h.nchan, 4);
  EXPECT_TRUE(h.complex);
  EXPECT_FALSE(h.invalid);
  EXPECT_EQ(h.version, 3);
  EXPECT_EQ(h.sync, capture::codif::kSyncV3);
  const std::span<const std::byte> payload(buf.data() + 64, 8192);
  EXPECT_EQ(first_pattern_mismatch(2, index, 0, payload), 8192u);
  EXPECT_NE(first_pattern_mismatch(1, index, 0, payload), 8192u);  // antenna matters
}

TEST(GenFrame, ImpairmentsChangeExactlyTheirPart) {
  const FrameBuilder b(params());
  std::vector<std::byte> buf(b.frame_bytes());
  capture::codif::Header h;
  capture::codif::Timing t;
  const uint64_t index = b.first_index();

  ASSERT_EQ(b.build(0, index, Fate::invalid, buf), b.frame_bytes());
  ASSERT_TRUE(capture::codif::decode(std::span<const std::byte>(buf),
                                     capture::codif::SyncSet::defaults(), h));
  EXPECT_TRUE(h.invalid);
  EXPECT_EQ(capture::codif::validate(h, buf.size(), t), capture::codif::Invalid::ok);

  ASSERT_EQ(b.build(0, index, Fate::bad_sync, buf), b.frame_bytes());
  EXPECT_FALSE(capture::codif::decode(std::span<const std::byte>(buf),
                                      capture::codif::SyncSet::defaults(), h));

  const std::size_t n = b.build(0, index, Fate::truncated, buf);
  EXPECT_EQ(n, 64u + 4096);
  ASSERT_TRUE(capture::codif::decode(std::span<const std::byte>(buf),
                                     capture::codif::SyncSet::defaults(), h));
  EXPECT_EQ(capture::codif::validate(h, n, t), capture::codif::Invalid::size_mismatch);
  EXPECT_EQ(first_pattern_mismatch(0, index, 0, std::span<const std::byte>(buf.data() + 64, 4096)),
            4096u);
}

TEST(GenFrame, TruncatedSizeRoundsHalfTheDataDownToEightBytes) {
  GenFrameParams p = params();
  p.payload_bytes = 7000;  // half is 3500 -> 3496
  p.nchan = 1;
  p.complex = false;
  EXPECT_EQ(FrameBuilder(p).truncated_bytes(), 64u + 3496);
}

TEST(GenFrame, V1LayoutCarriesItsSync) {
  GenFrameParams p = params();
  p.layout = "v1";
  const FrameBuilder b(p);
  std::vector<std::byte> buf(b.frame_bytes());
  b.build(1, b.first_index() + 3, Fate::plain, buf);
  capture::codif::Header h;
  ASSERT_TRUE(capture::codif::decode(std::span<const std::byte>(buf),
                                     capture::codif::SyncSet::defaults(), h));
  EXPECT_EQ(h.layout, capture::codif::Layout::v1);
  EXPECT_EQ(h.sync, capture::codif::kSyncV1);
  EXPECT_EQ(h.thread_id, 21);
  EXPECT_EQ(h.nchan, 4);
  EXPECT_EQ(h.frame, 10u);
}

TEST(GenFrame, BadParametersNameTheOption) {
  GenFrameParams p = params();
  p.payload_bytes = 100;
  EXPECT_NE(error_of(p).find("--payload-bytes"), std::string::npos) << error_of(p);
  p = params();
  p.total_samples = 1000;  // 1024 samples per frame: not a whole number of frames
  EXPECT_NE(error_of(p).find("--total-samples"), std::string::npos) << error_of(p);
  p = params();
  p.start_seconds = 101;
  EXPECT_NE(error_of(p).find("--start-seconds"), std::string::npos) << error_of(p);
  p = params();
  p.start_frame = 10000;
  EXPECT_NE(error_of(p).find("--start-frame"), std::string::npos) << error_of(p);
  p = params();
  p.station = "ATC";
  EXPECT_NE(error_of(p).find("--station"), std::string::npos) << error_of(p);
  p = params();
  p.payload_bytes = 65504;
  EXPECT_NE(error_of(p).find("largest UDP payload"), std::string::npos) << error_of(p);
  p = params();
  p.nbits = 3;  // 65536 bits / (4 * 3 * 2) is not whole
  EXPECT_NE(error_of(p).find("whole number of samples"), std::string::npos) << error_of(p);
}

uint64_t fnv1a(std::span<const std::byte> b) {
  uint64_t h = 1469598103934665603ULL;
  for (std::byte x : b) {
    h ^= std::to_integer<uint8_t>(x);
    h *= 1099511628211ULL;
  }
  return h;
}

// The payload pattern is a file format: recordings made by one version are checked by
// `rocecap verify` of another. These hashes were taken from main's fill_pattern before its
// word store was rewritten for speed; any change to the bytes fails here.
TEST(PayloadPattern, BytesAreStableAcrossVersions) {
  std::vector<std::byte> b(8192);
  fill_pattern(3, 12345, 0, b);
  EXPECT_EQ(fnv1a(b), 0xc25e0460ef4c1cfcULL);
  EXPECT_EQ(b[0], std::byte{0x73});
  EXPECT_EQ(b[1], std::byte{0xe8});
  std::vector<std::byte> u(1003);  // unaligned start and end
  fill_pattern(0, 0, 5, u);
  EXPECT_EQ(fnv1a(u), 0x8735f777719f05d3ULL);
  for (std::size_t i = 0; i < u.size(); ++i)
    ASSERT_EQ(std::to_integer<uint8_t>(u[i]), pattern_byte(0, 0, 5 + i)) << i;
}

}  // namespace
}  // namespace rocecap::tools
