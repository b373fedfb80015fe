// The head memo (StreamPipeline::head_memo, memo::refresh_head_memo in capture/head_memo.cpp)
// against the two memo compares it replaces on the verbs fast lane (memo::codif_memo_hit and
// memo::vdif_memo_hit, capture/frame_memo.hpp): over random frames, random completion lengths
// and memos moved on by the general path, both give the same answer and the same time. The
// lanes end to end (on_slot against on_frame) are frame_memo_test's and vdif_memo_test's.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <random>
#include <span>
#include <tuple>
#include <vector>

#include "capture/classifier.hpp"
#include "capture/frame_check.hpp"
#include "capture/frame_memo.hpp"
#include "test_frames.hpp"

namespace rocecap::capture {
namespace {

using test::frame;
using test::kGroup;
using test::kPort;
using test::kSrcA;
using test::kSrcB;

constexpr std::size_t kSplit = 128;

StreamSpec codif_spec(uint32_t src) {
  StreamSpec s;
  s.key = {kGroup, kPort, src};
  s.ring.slots = 16;
  s.ring.header_slot_bytes = kSplit;
  s.ring.payload_slot_bytes = test::kPayload;
  s.ring.memory.huge_pages = memory::Want::no;
  s.ring.memory.lock = memory::Want::no;
  return s;
}

// Two streams (a, b) and their classifier.
struct Pair {
  explicit Pair(StreamSpec sa, StreamSpec sb) : a(sa), b(sb) {}
  StreamPipeline a, b;
  std::vector<StreamPipeline*> streams{&a, &b};
  StreamClassifier classifier{{a.spec().key, b.spec().key}};

  // The general path, as on_slot's slow path runs it on a's QP: it moves a's memos.
  std::size_t check(const std::vector<std::byte>& f) {
    Checked c{};
    const auto head = std::span<const std::byte>(f).first(std::min(f.size(), kSplit));
    return check_frame(head, f.size(), classifier, streams, c, 0);
  }
};

// A header slot as the NIC leaves it: the frame's first bytes, and after a short frame the
// bytes of whatever frame the slot held before (random here).
std::array<std::byte, kSplit> slot_of(const std::vector<std::byte>& f, std::mt19937& rng) {
  std::array<std::byte, kSplit> s;
  for (std::byte& b : s)
    b = std::byte(static_cast<unsigned>(rng()));
  std::copy_n(f.data(), std::min(f.size(), kSplit), s.data());
  return s;
}

// The head memo compare as compiled for the baseline (SSE2) and for AVX2, as VerbsSource::poll_cq
// has both copies (one 32-byte vector is one register only with AVX2). The compares are forced
// inline (always_inline), so each wrapper holds its own copy.
using CodifHit = bool (*)(const StreamPipeline&, const std::byte*, uint32_t, memo::FrameTime&);
using VdifHit = bool (*)(const StreamPipeline&, const std::byte*, uint32_t, memo::VdifTime&);
bool codif_hit(const StreamPipeline& sp, const std::byte* f, uint32_t len, memo::FrameTime& t) {
  return memo::head_codif_hit(sp, f, len, t);
}
[[gnu::target("avx2")]] bool codif_hit_avx2(const StreamPipeline& sp, const std::byte* f,
                                            uint32_t len, memo::FrameTime& t) {
  return memo::head_codif_hit(sp, f, len, t);
}
bool vdif_hit(const StreamPipeline& sp, const std::byte* f, uint32_t len, memo::VdifTime& t) {
  return memo::head_vdif_hit(sp, f, len, t);
}
[[gnu::target("avx2")]] bool vdif_hit_avx2(const StreamPipeline& sp, const std::byte* f,
                                           uint32_t len, memo::VdifTime& t) {
  return memo::head_vdif_hit(sp, f, len, t);
}
// The AVX2 copies run only where the CPU has AVX2; elsewhere their tests report SKIPPED.
bool skip_avx2(bool avx2) {
  return avx2 && !__builtin_cpu_supports("avx2");
}

// Both forms on one completion of `len` bytes into `slot`; returns whether they hit.
bool codif_agree(const StreamPipeline& sp, const std::array<std::byte, kSplit>& slot, uint32_t len,
                 CodifHit hit = codif_hit) {
  const auto head = std::span<const std::byte>(slot).first(std::min<std::size_t>(len, kSplit));
  memo::FrameTime two, one;
  const bool by_two = memo::codif_memo_hit(head, len, sp, two);
  const bool by_one = hit(sp, slot.data(), len, one);
  EXPECT_EQ(by_one, by_two) << "completion of " << len << " bytes";
  if (by_one && by_two) {
    EXPECT_EQ(one.frame, two.frame);
    EXPECT_EQ(one.seconds, two.seconds);
  }
  return by_one && by_two;
}

TEST(HeadMemo, IsEmptyUntilBothMemosHoldAHeaderAndThenMatchesNothingElse) {
  Pair p(codif_spec(kSrcA), codif_spec(kSrcB));
  std::mt19937 rng(1);
  const auto f = frame(kSrcA, 100);
  const auto slot = slot_of(f, rng);
  EXPECT_EQ(p.a.head_memo.kind, HeadMemo::Kind::none);
  EXPECT_FALSE(codif_agree(p.a, slot, static_cast<uint32_t>(f.size())));
  EXPECT_FALSE(codif_agree(p.a, slot, 0)) << "an empty memo's mask is all clear";
  ASSERT_EQ(p.check(f), kCheckOk);
  EXPECT_EQ(p.a.head_memo.kind, HeadMemo::Kind::codif);
  EXPECT_EQ(p.a.head_memo.wire_bytes, f.size());
  EXPECT_EQ(p.a.head_memo.time_at, 42);
  EXPECT_EQ(p.b.head_memo.kind, HeadMemo::Kind::none) << "b's memos are its own";
  EXPECT_TRUE(codif_agree(p.a, slot_of(frame(kSrcA, 2345), rng), f.size()));
  EXPECT_FALSE(codif_agree(p.a, slot_of(frame(kSrcB, 101), rng), f.size())) << "b's frame";
  // The slot meta the lane copies is fill_meta's for this frame.
  const SlotMeta& m = p.a.head_memo.shape;
  EXPECT_EQ(m.wire_bytes, f.size());
  EXPECT_EQ(m.header_bytes, kSplit);
  EXPECT_EQ(m.payload_bytes, f.size() - kSplit);
  EXPECT_EQ(m.udp_payload_offset, 42);
}

// A header accepted by the general path replaces the memo's: the head memo follows it, so the
// old header misses and the new one hits, as with the two memo compares.
TEST(HeadMemo, FollowsTheCodifMemoWhenTheGeneralPathAcceptsAnotherHeader) {
  Pair p(codif_spec(kSrcA), codif_spec(kSrcB));
  std::mt19937 rng(2);
  const uint32_t len = static_cast<uint32_t>(frame(kSrcA, 100).size());
  ASSERT_EQ(p.check(frame(kSrcA, 100)), kCheckOk);
  const auto other = [](uint64_t i) {
    return test::edited(kSrcA, i, [](codif::Header& h) { h.metadata[0] ^= 0x55; });
  };
  EXPECT_FALSE(codif_agree(p.a, slot_of(other(101), rng), len));
  ASSERT_EQ(p.check(other(101)), kCheckOk);
  EXPECT_TRUE(codif_agree(p.a, slot_of(other(102), rng), len));
  EXPECT_FALSE(codif_agree(p.a, slot_of(frame(kSrcA, 103), rng), len));
}

// Random single or double byte changes over the first 112 bytes (every byte the head memo
// compares and those it must ignore), random completion lengths, and every fourth frame through
// the general path, which moves the memos to whatever it accepts: never a disagreement.
class HeadMemoCodif : public ::testing::TestWithParam<bool> {};  // AVX2 copy or baseline

TEST_P(HeadMemoCodif, RandomFramesAndMovingMemosNeverMakeItDisagreeWithTheTwoMemoCompares) {
  if (skip_avx2(GetParam())) GTEST_SKIP() << "this CPU has no AVX2";
  const CodifHit hit = GetParam() ? codif_hit_avx2 : codif_hit;
  Pair p(codif_spec(kSrcA), codif_spec(kSrcB));
  std::mt19937 rng(20261129);
  ASSERT_EQ(p.check(frame(kSrcA, 100)), kCheckOk);
  int hits = 0, moved = 0;
  for (int n = 0; n < 8000; ++n) {
    auto f = frame(kSrcA, 101 + rng() % 5000);
    const unsigned kind = rng() % 10;
    for (unsigned k = 0; k < (kind < 6 ? 1u : kind < 8 ? 2u : 0u); ++k)
      f[rng() % HeadMemo::kBytes] = std::byte(static_cast<unsigned>(rng()));
    uint32_t len = static_cast<uint32_t>(f.size());
    if (kind >= 8) len = static_cast<uint32_t>(rng() % 2 ? rng() % 140 : len + rng() % 9 - 4);
    hits += codif_agree(p.a, slot_of(f, rng), len, hit) ? 1 : 0;
    if (rng() % 4 == 0 && len == f.size() && p.check(f) == kCheckOk) ++moved;
  }
  EXPECT_GT(hits, 200) << "some must hit, or nothing was compared";
  EXPECT_LT(hits, 8000);
  EXPECT_GT(moved, 200);
}

INSTANTIATE_TEST_SUITE_P(BaselineOrAvx2, HeadMemoCodif, ::testing::Bool());

// VDIF, with and without VTP numbers: the same over the header bytes, flags and lengths.
bool vdif_agree(const StreamPipeline& sp, const std::array<std::byte, kSplit>& slot, uint32_t len,
                VdifHit hit) {
  const auto head = std::span<const std::byte>(slot).first(std::min<std::size_t>(len, kSplit));
  memo::VdifTime two, one;
  const bool by_two = memo::vdif_memo_hit(head, len, sp, two);
  const bool by_one = hit(sp, slot.data(), len, one);
  EXPECT_EQ(by_one, by_two) << "completion of " << len << " bytes";
  if (by_one && by_two) {
    EXPECT_EQ(one.frame, two.frame);
    EXPECT_EQ(one.seconds, two.seconds);
    EXPECT_EQ(one.psn, two.psn);
  }
  return by_one && by_two;
}

class HeadMemoVdif : public ::testing::TestWithParam<std::tuple<bool, bool>> {};  // vtp, avx2

TEST_P(HeadMemoVdif, RandomFramesAndMovingMemosNeverMakeItDisagreeWithTheTwoMemoCompares) {
  // Not a structured binding: clang-14 cannot capture one in the lambda below.
  const bool vtp = std::get<0>(GetParam());
  const bool avx2 = std::get<1>(GetParam());
  if (skip_avx2(avx2)) GTEST_SKIP() << "this CPU has no AVX2";
  const VdifHit hit = avx2 ? vdif_hit_avx2 : vdif_hit;
  Pair p(test::vdif_spec(kSrcA, vtp), test::vdif_spec(kSrcB, vtp));
  std::mt19937 rng(vtp ? 7 : 8);
  const auto make = [&](uint64_t psn, uint64_t index, std::size_t data = 256) {
    test::VdifDatagram d{kGroup, kSrcA, kPort, 100, data, 50, false, vtp};
    return test::vdif_datagram(d, psn, 0, index);
  };
  ASSERT_EQ(p.check(make(1, 100)), kCheckOk);
  EXPECT_EQ(p.a.head_memo.kind, HeadMemo::Kind::vdif);
  EXPECT_EQ(p.a.head_memo.time_at, vtp ? 50 : 42);
  int hits = 0, moved = 0;
  for (int n = 0; n < 8000; ++n) {
    auto f = make(rng(), 101 + rng() % 5000, rng() % 8 == 0 ? 264 : 256);
    const unsigned kind = rng() % 10;
    for (unsigned k = 0; k < (kind < 6 ? 1u : kind < 8 ? 2u : 0u); ++k)
      f[rng() % std::min(f.size(), HeadMemo::kBytes)] = std::byte(static_cast<unsigned>(rng()));
    uint32_t len = static_cast<uint32_t>(f.size());
    if (kind >= 8) len = static_cast<uint32_t>(rng() % 2 ? rng() % 140 : len + rng() % 9 - 4);
    hits += vdif_agree(p.a, slot_of(f, rng), len, hit) ? 1 : 0;
    if (rng() % 4 == 0 && len == f.size() && p.check(f) == kCheckOk) ++moved;
  }
  EXPECT_GT(hits, 1000);
  EXPECT_LT(hits, 8000);
  EXPECT_GT(moved, 200);
}

INSTANTIATE_TEST_SUITE_P(VtpOrNotBaselineOrAvx2, HeadMemoVdif,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool()));

}  // namespace
}  // namespace rocecap::capture
