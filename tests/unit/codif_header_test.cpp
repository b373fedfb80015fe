// CODIF header codec against hand-assembled words (doc/codif.md bit positions), validation reasons,
// timing, and the ATCA-style packet end to end through the net parser.
#include <gtest/gtest.h>

#include <limits>
#include <set>
#include <string>

#include "capture/codif/header.hpp"
#include "capture/net/packet.hpp"
#include "capture/net/udp_builder.hpp"
#include "codif_test_util.hpp"

namespace rocecap::capture::codif {
namespace {

using test::askap;
using test::payload;
using test::to_bytes;
using test::to_words;
using Words = std::array<uint64_t, 8>;

// Every v3 field set to a distinct value that fills its width, so any shifted, swapped or
// narrowed bit range shows.
Header full_v3(bool flags_a) {
  Header h;
  h.layout = Layout::v3;
  h.sync = kSyncV3;
  h.frame = 0x8123'4567;
  h.seconds = 0x9ABC'DEF1;
  h.epoch = 0xA5;
  h.nbits = 0xC3;
  h.atypical = flags_a;
  h.invalid = !flags_a;
  h.complex = flags_a;
  h.cal = !flags_a;
  h.representation = 0xB;
  h.version = 0x16;
  h.protocol = 0x5;
  h.period = 0xF00D;
  h.thread_id = 0x1357;
  h.group_id = 0x2468;
  h.secondary_id = 0x9ACE;
  h.station_id = station_id('P', 'K');
  h.nchan = 0xE1F2;
  h.block_length = 0x3C4D;
  h.data_words = 0xD0E0'F001;
  h.total_samples = 0x0123'4567'89AB'CDEF;
  h.metadata_id = 0xCAFE'F00D;
  h.metadata = {0x1111'2222'3333'4444u, 0x5555'6666'7777'8888u};
  return h;
}

Header full_v1(bool flags_a) {
  Header h;
  h.layout = Layout::v1;
  h.sync = kSyncV1;
  h.frame = 0x8123'4567;
  h.seconds = 0x2ABC'DEF1;  // 30 bits
  h.complex = flags_a;
  h.invalid = !flags_a;
  h.station_id = station_id('A', 'T');
  h.representation = 0x9;
  h.epoch = 0x2D;            // 6 bits
  h.data_words = 0xA1'B2C3;  // 24 bits
  h.nbits = 0x17;            // 5 bits
  h.version = 0x6;
  h.group_id = 0x2468;
  h.thread_id = 0x1357;
  h.nchan = 0x10000;  // stored as 0xFFFF
  h.block_length = 0x3C4D;
  h.period = 0xF00D;
  h.total_samples = 0xFEDC'BA98'7654'3210u;
  return h;
}

TEST(CodifCodec, V3RoundTripEveryField) {
  for (bool a : {true, false}) {
    const Header h = full_v3(a);
    std::array<std::byte, kHeaderBytes> b{};
    encode(h, b);
    Header d;
    ASSERT_TRUE(decode(std::span<const std::byte, kHeaderBytes>(b), SyncSet::defaults(), d));
    EXPECT_EQ(d, h);
  }
}

TEST(CodifCodec, V1RoundTripEveryField) {
  for (bool a : {true, false}) {
    const Header h = full_v1(a);
    std::array<std::byte, kHeaderBytes> b{};
    encode(h, b);
    Header d;
    ASSERT_TRUE(decode(std::span<const std::byte, kHeaderBytes>(b), SyncSet::defaults(), d));
    EXPECT_EQ(d, h);
  }
}

Words v3_words() {
  Words w{};
  w[0] = 0x8123'4567u | (uint64_t{0x9ABC'DEF1} << 32);
  w[1] = 0xA5u | (0xC3u << 8) | (1u << 16) | (1u << 18) | (0xBu << 20) | (0x16u << 24) |
         (uint64_t{0x5} << 29) | (uint64_t{0xF00D} << 48);
  w[2] = 0x1357u | (0x2468u << 16) | (uint64_t{0x9ACE} << 32) | (uint64_t{0x504B} << 48);
  w[3] = 0xE1F2u | (0x3C4Du << 16) | (uint64_t{0xD0E0'F001} << 32);
  w[4] = 0x0123'4567'89AB'CDEFu;
  w[5] = 0xFEED'CAFEu | (uint64_t{0xCAFE'F00D} << 32);
  w[6] = 0x1111'2222'3333'4444u;
  w[7] = 0x5555'6666'7777'8888u;
  return w;
}

TEST(CodifCodec, V3DecodeHandAssembledWords) {
  Header h;
  ASSERT_TRUE(decode(to_bytes(v3_words()), SyncSet::defaults(), h));
  EXPECT_EQ(h.layout, Layout::v3);
  EXPECT_EQ(h.frame, 0x8123'4567u);
  EXPECT_EQ(h.seconds, 0x9ABC'DEF1u);
  EXPECT_EQ(h.epoch, 0xA5);
  EXPECT_EQ(h.nbits, 0xC3);
  EXPECT_TRUE(h.atypical);
  EXPECT_FALSE(h.invalid);
  EXPECT_TRUE(h.complex);
  EXPECT_FALSE(h.cal);
  EXPECT_EQ(h.representation, 0xB);
  EXPECT_EQ(h.version, 0x16);
  EXPECT_EQ(h.protocol, 0x5);
  EXPECT_EQ(h.period, 0xF00D);
  EXPECT_EQ(h.thread_id, 0x1357);
  EXPECT_EQ(h.group_id, 0x2468);
  EXPECT_EQ(h.secondary_id, 0x9ACE);
  EXPECT_STREQ(station_name(h.station_id).data(), "PK");
  EXPECT_EQ(h.nchan, 0xE1F2u);
  EXPECT_EQ(h.block_length, 0x3C4D);
  EXPECT_EQ(h.data_words, 0xD0E0'F001u);
  EXPECT_EQ(h.payload_bytes(), uint64_t{0xD0E0'F001} * 8);
  EXPECT_EQ(h.frame_bytes(), uint64_t{0xD0E0'F001} * 8 + 64);
  EXPECT_EQ(h.total_samples, 0x0123'4567'89AB'CDEFu);
  EXPECT_EQ(h.sync, kSyncV3);
  EXPECT_EQ(h.metadata_id, 0xCAFE'F00Du);
  EXPECT_EQ(h.metadata[0], 0x1111'2222'3333'4444u);
  EXPECT_EQ(h.metadata[1], 0x5555'6666'7777'8888u);
}

TEST(CodifCodec, V3EncodeGivesHandAssembledWords) {
  std::array<std::byte, kHeaderBytes> b{};
  encode(full_v3(true), b);
  EXPECT_EQ(to_words(b), v3_words());
}

TEST(CodifCodec, V3SingleFlagBits) {
  Words w = v3_words();
  w[1] &= ~uint64_t{0xF0000};
  w[1] |= uint64_t{1} << 17;
  Header h;
  ASSERT_TRUE(decode(to_bytes(w), SyncSet::defaults(), h));
  EXPECT_TRUE(h.invalid);
  EXPECT_FALSE(h.atypical || h.complex || h.cal);
  w[1] ^= (uint64_t{1} << 17) | (uint64_t{1} << 19);
  ASSERT_TRUE(decode(to_bytes(w), SyncSet::defaults(), h));
  EXPECT_TRUE(h.cal);
  EXPECT_FALSE(h.atypical || h.complex || h.invalid);
}

Words v1_words() {
  Words w{};
  w[0] = 0x8123'4567u | (uint64_t{0x2ABC'DEF1} << 32) | (uint64_t{1} << 62);
  w[1] = 0x4154u | (0x9u << 22) | (uint64_t{0x2D} << 26) | (uint64_t{0xA1'B2C3} << 32) |
         (uint64_t{0x17} << 56) | (uint64_t{0x6} << 61);
  w[2] = 0x2468u | (0x1357u << 16) | (uint64_t{0xFFFF} << 32) | (uint64_t{0x3C4D} << 48);
  w[3] = uint64_t{0xF00D} << 32;
  w[4] = 0xFEDC'BA98'7654'3210u;
  w[5] = uint64_t{0xABAD'DEED} << 32;
  return w;
}

TEST(CodifCodec, V1DecodeHandAssembledWords) {
  Header h;
  ASSERT_TRUE(decode(to_bytes(v1_words()), SyncSet::defaults(), h));
  EXPECT_EQ(h.layout, Layout::v1);
  EXPECT_EQ(h.frame, 0x8123'4567u);
  EXPECT_EQ(h.seconds, 0x2ABC'DEF1u);
  EXPECT_TRUE(h.complex);
  EXPECT_FALSE(h.invalid);
  EXPECT_STREQ(station_name(h.station_id).data(), "AT");
  EXPECT_EQ(h.representation, 0x9);
  EXPECT_EQ(h.epoch, 0x2D);
  EXPECT_EQ(h.data_words, 0xA1'B2C3u);
  EXPECT_EQ(h.nbits, 0x17);
  EXPECT_EQ(h.version, 0x6);
  EXPECT_EQ(h.group_id, 0x2468);
  EXPECT_EQ(h.thread_id, 0x1357);
  EXPECT_EQ(h.nchan, 0x10000u);
  EXPECT_EQ(h.block_length, 0x3C4D);
  EXPECT_EQ(h.period, 0xF00D);
  EXPECT_EQ(h.total_samples, 0xFEDC'BA98'7654'3210u);
  EXPECT_EQ(h.sync, kSyncV1);
  // Fields v1 does not have stay zero.
  EXPECT_EQ(h.secondary_id, 0);
  EXPECT_EQ(h.protocol, 0);
  EXPECT_EQ(h.metadata_id, 0u);
  EXPECT_FALSE(h.cal || h.atypical);
}

TEST(CodifCodec, V1EncodeGivesHandAssembledWords) {
  std::array<std::byte, kHeaderBytes> b{};
  encode(full_v1(true), b);
  EXPECT_EQ(to_words(b), v1_words());
}

TEST(CodifCodec, V1InvalidBitAndSmallNchan) {
  Words w = v1_words();
  w[0] ^= (uint64_t{1} << 62) | (uint64_t{1} << 63);
  w[2] &= ~(uint64_t{0xFFFF} << 32);  // nchan - 1 == 0
  Header h;
  ASSERT_TRUE(decode(to_bytes(w), SyncSet::defaults(), h));
  EXPECT_TRUE(h.invalid);
  EXPECT_FALSE(h.complex);
  EXPECT_EQ(h.nchan, 1u);
  EXPECT_EQ(h.seconds, 0x2ABC'DEF1u);
}

TEST(CodifCodec, UnknownOrMisplacedSyncRejected) {
  Header h;
  Words w = v3_words();
  w[5] = 0xDEAD'BEEFu;
  EXPECT_FALSE(decode(to_bytes(w), SyncSet::defaults(), h));
  w[5] = uint64_t{kSyncV3} << 32;  // v3 sync in the v1 position
  EXPECT_FALSE(decode(to_bytes(w), SyncSet::defaults(), h));
  w[5] = kSyncV1;  // v1 sync in the v3 position
  EXPECT_FALSE(decode(to_bytes(w), SyncSet::defaults(), h));
  const std::array<std::byte, 63> short_bytes{};
  EXPECT_FALSE(decode(std::span<const std::byte>(short_bytes), SyncSet::defaults(), h));
  EXPECT_FALSE(decode(to_bytes(v3_words()), SyncSet{}, h));  // empty set accepts nothing
}

TEST(CodifCodec, AdeadbeeOnlyWhenConfigured) {
  Words w = v3_words();
  w[5] = (w[5] & ~uint64_t{0xFFFF'FFFF}) | kSyncAdeadbee;
  Header h;
  EXPECT_FALSE(decode(to_bytes(w), SyncSet::defaults(), h));
  SyncSet as_v3 = SyncSet::defaults();
  ASSERT_TRUE(as_v3.add(kSyncAdeadbee, Layout::v3));
  ASSERT_TRUE(decode(to_bytes(w), as_v3, h));
  EXPECT_EQ(h.layout, Layout::v3);
  EXPECT_EQ(h.sync, kSyncAdeadbee);
  EXPECT_EQ(h.frame, 0x8123'4567u);

  Words v = v1_words();
  v[5] = uint64_t{kSyncAdeadbee} << 32;
  EXPECT_FALSE(decode(to_bytes(v), as_v3, h));  // configured for the v3 position only
  SyncSet as_v1 = SyncSet::defaults();
  ASSERT_TRUE(as_v1.add(kSyncAdeadbee, Layout::v1));
  ASSERT_TRUE(decode(to_bytes(v), as_v1, h));
  EXPECT_EQ(h.layout, Layout::v1);
  EXPECT_EQ(h.sync, kSyncAdeadbee);
  EXPECT_EQ(h.nchan, 0x10000u);
  std::array<std::byte, kHeaderBytes> again{};
  encode(h, again);
  EXPECT_EQ(to_words(again), v);
}

TEST(CodifCodec, SyncSetAdd) {
  SyncSet s = SyncSet::defaults();
  EXPECT_EQ(s.size, 2u);
  EXPECT_EQ(s.entries[0].sync, kSyncV3);
  EXPECT_EQ(s.entries[0].layout, Layout::v3);
  EXPECT_EQ(s.entries[1].sync, kSyncV1);
  EXPECT_EQ(s.entries[1].layout, Layout::v1);
  EXPECT_FALSE(s.add(kSyncV3, Layout::v1));  // duplicate word, whatever the layout
  EXPECT_EQ(s.size, 2u);
  EXPECT_TRUE(s.add(kSyncAdeadbee, Layout::v3));
  EXPECT_TRUE(s.add(0x1234'5678, Layout::v1));
  EXPECT_EQ(s.size, SyncSet::kMaxSyncs);
  EXPECT_FALSE(s.add(0x0BAD'F00D, Layout::v3));  // full
  EXPECT_EQ(s.size, SyncSet::kMaxSyncs);
}

TEST(CodifCodec, EncodeTruncatesToFieldWidths) {
  Header h = askap(Layout::v1);
  h.seconds = 0xFFFF'FFFF;  // v1 has 30 bits
  h.epoch = 0xFF;           // 6 bits
  std::array<std::byte, kHeaderBytes> b{};
  encode(h, b);
  Header d;
  ASSERT_TRUE(decode(std::span<const std::byte, kHeaderBytes>(b), SyncSet::defaults(), d));
  EXPECT_EQ(d.seconds, 0x3FFF'FFFFu);
  EXPECT_EQ(d.epoch, 0x3F);
  EXPECT_FALSE(d.invalid);  // the seconds overflow did not spill into bits 62/63
  EXPECT_TRUE(d.complex);
}

// ---- validate ----

Invalid check(const Header& h, std::size_t udp = 8192 + 64) {
  Timing t;
  return validate(h, udp, t);
}

TEST(CodifValidate, AskapTiming) {
  Timing t;
  ASSERT_EQ(validate(askap(), 8256, t), Invalid::ok);
  EXPECT_EQ(t.samples_per_frame, 512u);
  EXPECT_EQ(t.frames_per_period, 62'500u);
  EXPECT_EQ(t.period, 27u);
  Timing t1;
  ASSERT_EQ(validate(askap(Layout::v1), 8256, t1), Invalid::ok);
  EXPECT_EQ(t1.frames_per_period, 62'500u);
}

TEST(CodifValidate, EveryReason) {
  Header h = askap();
  EXPECT_EQ(check(h), Invalid::ok);
  h.data_words = 0;
  EXPECT_EQ(check(h, 64), Invalid::zero_data_length);
  EXPECT_EQ(check(askap(), 8255), Invalid::size_mismatch);
  EXPECT_EQ(check(askap(), 8192), Invalid::size_mismatch);  // header not counted in length
  h = askap();
  h.nbits = 0;
  EXPECT_EQ(check(h), Invalid::zero_nbits);
  h = askap();
  h.nchan = 0;
  EXPECT_EQ(check(h), Invalid::zero_nchan);
  h = askap();
  h.period = 0;
  EXPECT_EQ(check(h), Invalid::zero_period);
  h = askap();
  h.total_samples = 0;
  EXPECT_EQ(check(h), Invalid::zero_total_samples);
  h = askap();
  h.nbits = 3;  // 65536 bits / (4 x 3 x 2) is not whole
  EXPECT_EQ(check(h), Invalid::fractional_samples);
  h = askap();
  h.total_samples = 32'000'000 + 256;  // half a frame more
  EXPECT_EQ(check(h), Invalid::fractional_frames);
  h = askap();
  h.frame = 62'499;
  EXPECT_EQ(check(h), Invalid::ok);
  h.frame = 62'500;
  EXPECT_EQ(check(h), Invalid::frame_out_of_range);
  // One 64-bit real sample per frame: 2^32 frames per period fit the frame field, one more not.
  h = askap();
  h.data_words = 1;
  h.nchan = 1;
  h.nbits = 64;
  h.complex = false;
  h.total_samples = uint64_t{1} << 32;
  EXPECT_EQ(check(h, 72), Invalid::ok);
  h.total_samples += 1;
  EXPECT_EQ(check(h, 72), Invalid::too_many_frames);
}

TEST(CodifValidate, EveryReasonHasItsOwnName) {
  std::set<std::string> names;
  for (std::size_t i = 0; i < kInvalidCount; ++i) {
    const auto name = to_string(static_cast<Invalid>(i));
    EXPECT_NE(name, "unknown");
    names.emplace(name);
  }
  EXPECT_EQ(names.size(), kInvalidCount);
  EXPECT_EQ(to_string(Invalid::bad_sync), "bad_sync");
}

// ---- timing ----

Timing askap_timing() {
  Timing t;
  EXPECT_EQ(validate(askap(), 8256, t), Invalid::ok);
  return t;
}

TEST(CodifTiming, AbsoluteIndex) {
  const Timing t = askap_timing();
  Header h = askap();
  h.seconds = 27'000;  // 1000 periods
  h.frame = 5;
  EXPECT_EQ(absolute_index(h, t), 1000u * 62'500 + 5);
}

TEST(CodifTiming, AdvanceAcrossPeriodBoundaries) {
  const Timing t = askap_timing();
  Header h = askap();
  h.frame = 62'499;
  h.invalid = true;
  const Header a = advance(h, t, 1);
  EXPECT_EQ(a.seconds, 27u);
  EXPECT_EQ(a.frame, 0u);
  const Header b = advance(a, t, 62'499);
  EXPECT_EQ(b.seconds, 27u);
  EXPECT_EQ(b.frame, 62'499u);
  const Header c = advance(h, t, 62'501);
  EXPECT_EQ(c.seconds, 54u);
  EXPECT_EQ(c.frame, 0u);
  // Everything else is copied.
  Header c_rest = c;
  c_rest.seconds = h.seconds;
  c_rest.frame = h.frame;
  EXPECT_EQ(c_rest, h);
  EXPECT_EQ(advance(h, t, 0), h);
}

TEST(CodifTiming, AdvanceByLargeN) {
  const Timing t = askap_timing();
  Header h = askap();
  h.frame = 62'499;
  // 10^12 frames = 16,000,000 periods of 62,500 frames = 432,000,000 s later, same frame.
  const Header a = advance(h, t, 1'000'000'000'000u);
  EXPECT_EQ(a.seconds, 432'000'000u);
  EXPECT_EQ(a.frame, 62'499u);
  EXPECT_EQ(absolute_index(a, t), absolute_index(h, t) + 1'000'000'000'000u);
}

TEST(CodifTiming, AtIndexInvertsAbsoluteIndex) {
  const Timing t = askap_timing();
  Header h = askap();
  h.seconds = 27 * 777;
  h.frame = 12'345;
  EXPECT_EQ(at_index(h, t, absolute_index(h, t)), h);
  const Header z = at_index(h, t, 0);
  EXPECT_EQ(z.seconds, 0u);
  EXPECT_EQ(z.frame, 0u);
  const Header y = at_index(h, t, 62'500 * 3 + 7);
  EXPECT_EQ(y.seconds, 81u);
  EXPECT_EQ(y.frame, 7u);
}

TEST(CodifTiming, OddPeriodsRollOver) {
  // Period 7 s, 3 frames per period (1 sample of 8 real 8-bit channels per 8-byte frame).
  Header h;
  h.nbits = 8;
  h.nchan = 8;
  h.data_words = 1;
  h.total_samples = 3;
  h.period = 7;
  Timing t;
  ASSERT_EQ(validate(h, 72, t), Invalid::ok);
  ASSERT_EQ(t.frames_per_period, 3u);
  const uint32_t expect_seconds[] = {0, 0, 0, 7, 7, 7, 14};
  for (uint32_t n = 0; n < 7; ++n) {
    const Header a = advance(h, t, n);
    EXPECT_EQ(a.seconds, expect_seconds[n]) << n;
    EXPECT_EQ(a.frame, n % 3) << n;
  }
}

TEST(CodifTiming, SecondsOffsetFromPeriodIsKept) {
  const Timing t = askap_timing();
  Header h = askap();
  h.seconds = 27 * 10 + 5;  // a sender whose periods start 5 s after the epoch grid
  h.frame = 62'499;
  EXPECT_EQ(absolute_index(h, t), 10u * 62'500 + 62'499);
  const Header a = advance(h, t, 1);
  EXPECT_EQ(a.seconds, 27u * 11 + 5);
  EXPECT_EQ(a.frame, 0u);
  EXPECT_EQ(absolute_index(a, t), absolute_index(h, t) + 1);
  EXPECT_EQ(at_index(h, t, absolute_index(h, t)), h);
}

TEST(CodifTime, EpochUnixSeconds) {
  // 2000-01-01T00:00:00Z is 946,684,800 s after 1970-01-01 (10,957 days); 2000 is a leap year,
  // so 1 Jul is 182 days later and 2001-01-01 366 days later; 2020-01-01 is 18,262 days after
  // 1970 and 2020 is a leap year too.
  constexpr int64_t day = 86'400;
  EXPECT_EQ(epoch_unix_seconds(0), 10'957 * day);
  EXPECT_EQ(epoch_unix_seconds(0), 946'684'800);
  EXPECT_EQ(epoch_unix_seconds(1), 946'684'800 + 182 * day);
  EXPECT_EQ(epoch_unix_seconds(2), 946'684'800 + 366 * day);
  EXPECT_EQ(epoch_unix_seconds(2), 978'307'200);
  EXPECT_EQ(epoch_unix_seconds(40), 18'262 * day);
  EXPECT_EQ(epoch_unix_seconds(40), 1'577'836'800);
  EXPECT_EQ(epoch_unix_seconds(41), 1'593'561'600);
  // 2001 is not a leap year: 1 Jan -> 1 Jul is 181 days.
  EXPECT_EQ(epoch_unix_seconds(3) - epoch_unix_seconds(2), 181 * day);
}

TEST(CodifTime, FrameStartWithIntegerFrameDuration) {
  const Timing t = askap_timing();
  Header h = askap();  // epoch 40
  h.seconds = 54;
  h.frame = 1000;  // 1000 x 432 us
  EXPECT_EQ(frame_start_unix_ns(h, t), (1'577'836'800LL + 54) * 1'000'000'000 + 432'000'000);
}

TEST(CodifTime, FrameStartWithNonIntegerFrameDuration) {
  // 7 frames per 27 s period: each frame 3.857142857142... s; start times round down.
  Header h;
  h.nbits = 8;
  h.nchan = 1;
  h.data_words = 1;
  h.total_samples = 56;
  h.period = 27;
  h.epoch = 41;
  Timing t;
  ASSERT_EQ(validate(h, 72, t), Invalid::ok);
  ASSERT_EQ(t.frames_per_period, 7u);
  h.seconds = 27;
  h.frame = 3;  // 81 / 7 s = 11.571428571428...
  EXPECT_EQ(frame_start_unix_ns(h, t), (1'593'561'600LL + 27) * 1'000'000'000 + 11'571'428'571);
  h.frame = 6;  // 162 / 7 s = 23.142857142857...
  EXPECT_EQ(frame_start_unix_ns(h, t), (1'593'561'600LL + 27) * 1'000'000'000 + 23'142'857'142);
}

TEST(CodifTime, FrameStartSaturatesFarInTheFuture) {
  const Timing t = askap_timing();
  Header h = askap();
  h.epoch = 255;
  h.seconds = 0xFFFF'FFFF;
  EXPECT_EQ(frame_start_unix_ns(h, t), std::numeric_limits<int64_t>::max());
}

TEST(CodifStation, Names) {
  EXPECT_EQ(station_id('A', 'T'), 0x4154);
  EXPECT_STREQ(station_name(0x4154).data(), "AT");
  EXPECT_STREQ(station_name(0x0141).data(), "?A");
  EXPECT_STREQ(station_name(0x7F20).data(), "? ");
}

// ---- the ATCA-style packet end to end ----

TEST(CodifPacket, AtcaStyle8298BytePacket) {
  Header h = askap();
  h.seconds = 27 * 3;
  h.frame = 4242;
  std::vector<std::byte> codif = payload(h);
  ASSERT_EQ(codif.size(), 8256u);
  capture::net::UdpFrameSpec s;
  s.dst_mac = capture::net::multicast_mac(0xEF110001);
  s.src_ip = 0xC0000201;
  s.dst_ip = 0xEF110001;  // 239.17.0.1:36001
  s.src_port = 36001;
  s.dst_port = 36001;
  std::vector<std::byte> wire(14 + 20 + 8 + codif.size());
  ASSERT_EQ(wire.size(), 8298u);
  ASSERT_EQ(capture::net::write_udp_headers(s, codif.size(), wire), 42u);
  std::copy(codif.begin(), codif.end(), wire.begin() + 42);

  // As the verbs path sees it: 128-byte header slot, the rest in the payload slot.
  capture::net::UdpFrame f;
  ASSERT_EQ(capture::net::parse_udp(std::span(wire).first(128), wire.size(), f),
            capture::net::ParseError::ok);
  ASSERT_EQ(f.payload_offset, 42);
  ASSERT_EQ(f.payload_bytes, 8256u);
  Header d;
  ASSERT_TRUE(decode(std::span(wire).subspan(f.payload_offset), SyncSet::defaults(), d));
  EXPECT_EQ(d, h);
  Timing t;
  ASSERT_EQ(validate(d, f.payload_bytes, t), Invalid::ok);
  EXPECT_EQ(absolute_index(d, t), 3u * 62'500 + 4242);
}

}  // namespace
}  // namespace rocecap::capture::codif
