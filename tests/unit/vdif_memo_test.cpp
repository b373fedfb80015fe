// The verbs path's VDIF fast lane (Ingest::on_slot with memo::vdif_memo_hit, capture/
// frame_memo.hpp) against the general path (Ingest::on_frame: parse, classify, VDIF decode and
// validate every frame), with and without VTP numbers, over the same random traffic: the same
// publications, arrivals, reject counts, sequencer counters and VTP counts.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "capture/frame_memo.hpp"
#include "capture/ingest.hpp"
#include "capture/reject_reason.hpp"
#include "capture/vdif/header.hpp"
#include "ingest_slots.hpp"
#include "test_frames.hpp"

namespace rocecap::capture {
namespace {

using test::kGroup;
using test::kPort;
using test::kSrcA;
using test::kSrcB;
constexpr uint64_t kFps = 100;
constexpr std::size_t kData = 256;

struct Side : test::SlotSide {
  explicit Side(bool vtp) : SlotSide(test::vdif_spec(kSrcA, vtp), test::vdif_spec(kSrcB, vtp)) {}
};

// One flow's traffic: the frame of `index` with VTP number `psn`, of `thread`, and what `edit`
// does to it; `at` is where the VDIF header starts.
struct Flow {
  uint32_t src = kSrcA;
  bool vtp = true;
  uint64_t next = 0, psn = 0;
  std::size_t at() const { return 42 + (vtp ? vdif::kVtpBytes : 0); }
  std::vector<std::byte> make(uint64_t psn_, uint64_t index, uint16_t thread = 0,
                              std::size_t data = kData, bool legacy = false) const {
    test::VdifDatagram d{kGroup, src, kPort, kFps, data, 50, legacy, vtp};
    return test::vdif_datagram(d, psn_, thread, index);
  }
  std::vector<std::byte> in_order() { return make(psn++, next++); }
};

void put_le24(std::byte* p, uint32_t v) {
  for (int i = 0; i < 3; ++i)
    p[i] = std::byte(static_cast<uint8_t>(v >> (8 * i)));
}

// A random frame of `fl`: mostly the next one, else a gap (with or without VTP numbers
// skipped), a late or repeated frame and number, the invalid bit, another thread, a legacy
// header (header_form), a frame number beyond the second (frame_out_of_range), a wild time (an
// outlier), another frame size, a length field that is not the UDP payload's (size_mismatch),
// or one random byte of the Ethernet/IPv4/UDP headers (not the addresses or ports, as in
// frame_memo_test) or of the VDIF header after the frame number (not the VTP number, whose
// random values would leave every later one out of order).
std::vector<std::byte> random_frame(std::mt19937& rng, Flow& fl) {
  const unsigned kind = rng() % 100;
  if (kind < 62) return fl.in_order();
  if (kind < 70) {
    fl.next += 1 + rng() % 5;
    fl.psn += rng() % 3;
    return fl.in_order();
  }
  if (kind < 77) return fl.make(fl.psn - 1 - rng() % 6, fl.next - 1 - rng() % 6);
  if (kind < 82) {
    auto f = kind < 80 ? fl.in_order() : fl.make(fl.psn++, fl.next++, 1);
    if (kind < 80) f[fl.at() + 3] |= std::byte{0x80};  // invalid bit
    return f;
  }
  if (kind < 84) return fl.make(fl.psn++, fl.next++, 0, kData, true);
  if (kind < 86) {
    auto f = fl.in_order();
    put_le24(f.data() + fl.at() + 4, static_cast<uint32_t>(kFps + rng() % 10));
    return f;
  }
  if (kind < 88) return fl.make(fl.psn++, fl.next + 3'000'000 + rng() % 4);
  if (kind < 91) {
    auto f = fl.make(fl.psn++, fl.next++, 0, kData + 8);
    if (kind == 90) put_le24(f.data() + fl.at() + 8, (32 + kData) / 8);
    return f;
  }
  auto f = fl.in_order();
  const std::size_t headers = 26 + 4, vdif_bytes = 1 + 25;  // bytes 0-25, 38-41; VDIF 3, 7-31
  std::size_t pick = rng() % (headers + vdif_bytes);
  if (pick < headers) {
    pick += pick < 26 ? 0 : 12;
  } else {
    pick -= headers;
    pick = fl.at() + (pick == 0 ? 3 : 6 + pick);
  }
  f[pick] = std::byte(static_cast<unsigned>(rng()));
  return f;
}

void expect_same_vtp(const VtpState& x, const VtpState& y) {
  EXPECT_EQ(x.skipped.get(), y.skipped.get());
  EXPECT_EQ(x.out_of_order.get(), y.out_of_order.get());
  EXPECT_EQ(x.pending(), y.pending());
}

uint64_t rejected_as(const Ingest& ingest, vdif::Invalid why) {
  return ingest.rejected(reject_index(why));
}

class VdifFastLane : public ::testing::TestWithParam<bool> {};

TEST_P(VdifFastLane, OnSlotPublishesAndCountsWhatTheGeneralPathDoes) {
  const bool vtp = GetParam();
  Side fast(vtp), general(vtp);
  std::array<Flow, 2> flows{Flow{kSrcA, vtp, 100, 7}, Flow{kSrcB, vtp, 2000, 50}};
  vdif::Header first;
  first.seconds = 1;
  first.frame = 5;
  first.epoch = 50;
  const int64_t start = vdif::frame_start_unix_ns(first, {kData * 4, kFps});
  fast.ingest.set_start(start);  // frames 100-104 of a come before the run start
  general.ingest.set_start(start);
  std::mt19937 rng(vtp ? 20261129 : 20261130);
  test::feed_both(fast, general, 6000, [&] {
    const uint32_t s = rng() % 2;
    return std::pair(s, random_frame(rng, flows[s]));
  });
  test::expect_same_output(fast, general);
  expect_same_vtp(fast.a.vtp, general.a.vtp);
  expect_same_vtp(fast.b.vtp, general.b.vtp);
  // The traffic reaches every rule.
  EXPECT_GT(fast.out_a.size() + fast.out_b.size(), 4000u);
  EXPECT_GT(fast.ingest.rejected(kRejectBeforeStart), 0u);
  EXPECT_GT(fast.ingest.rejected(kRejectTimelineOutlier), 0u);
  EXPECT_GT(rejected_as(fast.ingest, vdif::Invalid::header_form), 0u);
  EXPECT_GT(rejected_as(fast.ingest, vdif::Invalid::frame_out_of_range), 0u);
  EXPECT_GT(rejected_as(fast.ingest, vdif::Invalid::size_mismatch), 0u);
  for (const StreamPipeline* sp : {&fast.a, &fast.b}) {
    const SequencerStats x = sp->sequencer().stats();
    EXPECT_GT(x.lost, 0u);
    EXPECT_GT(x.late_placed, 0u);
    EXPECT_GT(x.duplicate + x.late_dropped, 0u);
    EXPECT_GT(x.invalid, 0u);
    if (vtp) {
      EXPECT_GT(sp->vtp.skipped.get() + sp->vtp.out_of_order.get(), 0u);
    }
  }
}

std::string lane_name(const ::testing::TestParamInfo<bool>& p) {
  return p.param ? "vtp" : "no_vtp";
}
INSTANTIATE_TEST_SUITE_P(Vtp, VdifFastLane, ::testing::Bool(), lane_name);

// The UDP memo moves on to a frame the VDIF check then rejects (its length field is not its
// UDP payload's); the next such frame hits that UDP memo and the VDIF memo's header bytes, but
// not its payload length, so it is rejected too, as the general path rejects it.
TEST(VdifFastLane, ALengthFieldThatIsNotThePayloadsIsRejectedAfterTheUdpMemoMovedOn) {
  Side fast(true);
  Flow fl{kSrcA, true, 100, 0};
  test::into_slot(fast.ingest, 0, fl.in_order());
  for (int i = 0; i < 2; ++i) {
    auto f = fl.make(fl.psn++, fl.next++, 0, kData + 8);
    put_le24(f.data() + fl.at() + 8, (32 + kData) / 8);
    test::into_slot(fast.ingest, 0, f);
  }
  test::into_slot(fast.ingest, 0, fl.in_order());
  fast.ingest.flush_all();
  fast.drain();
  EXPECT_EQ(rejected_as(fast.ingest, vdif::Invalid::size_mismatch), 2u);
  ASSERT_FALSE(fast.out_a.empty());
  EXPECT_EQ(fast.out_a.front().index, 100u);
  EXPECT_EQ(fast.out_a.back().index, 103u);
  EXPECT_EQ(fast.a.sequencer().stats().lost, 2u);
}

// On the verbs path a frame rejected on its head is checked again on its head joined with its
// payload (Ingest::check_joined). Its VTP number is noted once: before, the second check noted
// it again and counted it out of order.
TEST(VdifFastLane, ARejectedFrameNotesItsVtpNumberOnce) {
  Side fast(true);
  Flow fl{kSrcA, true, 100, 0};
  test::into_slot(fast.ingest, 0, fl.in_order());
  auto bad = fl.in_order();
  put_le24(bad.data() + fl.at() + 4, static_cast<uint32_t>(kFps));  // frame_out_of_range
  test::into_slot(fast.ingest, 0, bad);
  test::into_slot(fast.ingest, 0, fl.in_order());
  fast.ingest.flush_all();
  EXPECT_EQ(rejected_as(fast.ingest, vdif::Invalid::frame_out_of_range), 1u);
  EXPECT_EQ(fast.a.vtp.out_of_order.get(), 0u);
  EXPECT_EQ(fast.a.vtp.skipped.get(), 0u);
}

}  // namespace
}  // namespace rocecap::capture
