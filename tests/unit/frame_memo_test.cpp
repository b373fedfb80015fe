// The verbs path's inline fast path (capture/frame_memo.hpp, memo::check_codif_memos) against
// the general path: whenever it accepts a frame, check_frame on pipelines with empty memos
// (full parse, classify, CODIF decode and validate) accepts it too, with the same Checked.
// And Ingest::on_slot (the fast path, reading the memos in place) against Ingest::on_frame
// (the general path) over the same random traffic: the same publications and counters.
#include "capture/frame_memo.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "capture/classifier.hpp"
#include "capture/ingest.hpp"
#include "ingest_slots.hpp"
#include "test_frames.hpp"

namespace rocecap::capture {
namespace {

using test::edited;
using test::expect_same_output;
using test::frame;
using test::into_slot;
using test::kGroup;
using test::kPayload;
using test::kPort;
using test::kSrcA;
using test::kSrcB;

StreamSpec spec(uint32_t src) {
  StreamSpec s;
  s.key = {kGroup, kPort, src};
  s.ring.slots = 16;
  s.ring.header_slot_bytes = 128;
  s.ring.payload_slot_bytes = kPayload;
  s.ring.memory.huge_pages = memory::Want::no;
  s.ring.memory.lock = memory::Want::no;
  return s;
}

// Two streams (a, b) and their classifier.
struct Pair {
  StreamPipeline a{spec(kSrcA)}, b{spec(kSrcB)};
  std::vector<StreamPipeline*> streams{&a, &b};
  StreamClassifier classifier{{a.spec().key, b.spec().key}};
};

std::span<const std::byte> head_of(const std::vector<std::byte>& f) {
  return std::span<const std::byte>(f).first(std::min<std::size_t>(f.size(), 128));
}

void expect_same(const Checked& x, const Checked& y) {
  EXPECT_EQ(x.stream, y.stream);
  EXPECT_EQ(x.codif, y.codif);
  const net::UdpFrame &f = x.frame, &g = y.frame;
  EXPECT_EQ(f.dst_mac, g.dst_mac);
  EXPECT_EQ(f.src_mac, g.src_mac);
  EXPECT_EQ(f.vlan_count, g.vlan_count);
  EXPECT_EQ(f.vlan_id, g.vlan_id);
  EXPECT_EQ(f.src_ip, g.src_ip);
  EXPECT_EQ(f.dst_ip, g.dst_ip);
  EXPECT_EQ(f.src_port, g.src_port);
  EXPECT_EQ(f.dst_port, g.dst_port);
  EXPECT_EQ(f.ip_offset, g.ip_offset);
  EXPECT_EQ(f.udp_offset, g.udp_offset);
  EXPECT_EQ(f.payload_offset, g.payload_offset);
  EXPECT_EQ(f.payload_bytes, g.payload_bytes);
  EXPECT_EQ(f.frame_bytes, g.frame_bytes);
  EXPECT_TRUE(x.header == y.header);
  EXPECT_EQ(x.timing.samples_per_frame, y.timing.samples_per_frame);
  EXPECT_EQ(x.timing.frames_per_period, y.timing.frames_per_period);
  EXPECT_EQ(x.timing.period, y.timing.period);
  EXPECT_EQ(x.timing.header_bytes, y.timing.header_bytes);
}

// The fast path on `warm` (memos filled by earlier frames) for frame `f` on stream `expected`;
// when it accepts, the general path on fresh pipelines must accept with the same result.
// Returns whether the fast path accepted.
bool agrees(Pair& warm, const std::vector<std::byte>& f, uint32_t expected) {
  Checked fast{};
  const bool hit = memo::check_codif_memos(head_of(f), f.size(), warm.streams, expected, fast);
  if (!hit) return false;
  Pair fresh;
  Checked full{};
  const std::size_t r =
      check_frame(head_of(f), f.size(), fresh.classifier, fresh.streams, full, expected);
  EXPECT_EQ(r, kCheckOk) << "the fast path accepted a frame the general path rejects";
  if (r == kCheckOk) expect_same(fast, full);
  return true;
}

// Warms both memos of stream a (one frame through check_frame, as on_slot does).
void warm_up(Pair& p) {
  const auto f = frame(kSrcA, 100);
  Checked c{};
  ASSERT_EQ(check_frame(head_of(f), f.size(), p.classifier, p.streams, c, 0), kCheckOk);
}

// The memo compares' vector form (memo::same_bytes) against memcmp: every byte of the N is
// compared, none outside them, also where its last 16-byte piece overlaps the one before.
template <std::size_t N>
void expect_same_bytes_is_memcmp() {
  std::array<std::byte, 80> a{}, b{};
  for (std::size_t i = 0; i < a.size(); ++i)
    a[i] = b[i] = static_cast<std::byte>(i * 37 + 1);
  EXPECT_TRUE(memo::same_bytes<N>(a.data() + 3, b.data() + 3)) << N;
  for (std::size_t i = 0; i < N + 8; ++i) {
    for (const std::byte flip : {std::byte{0x01}, std::byte{0x80}}) {
      b[3 + i] ^= flip;
      EXPECT_EQ(memo::same_bytes<N>(a.data() + 3, b.data() + 3),
                std::memcmp(a.data() + 3, b.data() + 3, N) == 0)
          << "N " << N << ", byte " << i;
      EXPECT_EQ(memo::same_bytes<N>(a.data() + 3, b.data() + 3), i >= N) << N << " " << i;
      b[3 + i] ^= flip;
    }
  }
}

TEST(MemoFastPath, SameBytesComparesExactlyTheNBytes) {
  expect_same_bytes_is_memcmp<16>();
  expect_same_bytes_is_memcmp<25>();  // the VDIF memo's tail
  expect_same_bytes_is_memcmp<32>();
  expect_same_bytes_is_memcmp<56>();  // the CODIF memo's words 1-7
  expect_same_bytes_is_memcmp<64>();
}

TEST(MemoFastPath, AcceptsTheCommonCaseAsTheGeneralPathDoes) {
  Pair p;
  EXPECT_FALSE(agrees(p, frame(kSrcA, 100), 0)) << "memos empty: the fast path must not guess";
  warm_up(p);
  for (uint64_t i = 101; i < 3000; i += 7)  // other frames and seconds of the same stream
    EXPECT_TRUE(agrees(p, frame(kSrcA, i), 0)) << i;
  auto unread = frame(kSrcA, 101);
  for (std::size_t at : {15, 18, 19, 22, 24, 25, 40, 41})  // TOS, id, TTL, checksums
    unread[at] = std::byte(0x5A);
  EXPECT_TRUE(agrees(p, unread, 0));
}

TEST(MemoFastPath, LeavesEveryOtherFrameToTheGeneralPath) {
  Pair p;
  warm_up(p);
  auto with = [](std::vector<std::byte> f, std::size_t at, unsigned v) {
    f[at] = std::byte(v);
    return f;
  };
  EXPECT_FALSE(agrees(p, frame(kSrcB, 101), 0)) << "b's frame on a's QP";
  EXPECT_FALSE(agrees(p, frame(kSrcB, 101), 1)) << "b's memos are empty";
  EXPECT_FALSE(agrees(p, with(frame(kSrcA, 101), 20, 0x20), 0)) << "more fragments";
  EXPECT_FALSE(agrees(p, with(frame(kSrcA, 101), 23, 6), 0)) << "TCP";
  auto shorter = frame(kSrcA, 101);
  shorter.resize(shorter.size() - 4);
  EXPECT_FALSE(agrees(p, shorter, 0)) << "a shorter completion";
  // CODIF words 1-7 (bytes 42+8 .. 42+63): any change is decoded and validated in full.
  for (std::size_t at = 42 + 8; at < 42 + 64; ++at) {
    auto f = frame(kSrcA, 101);
    f[at] ^= std::byte(0x01);
    EXPECT_FALSE(agrees(p, f, 0)) << "CODIF header byte " << at - 42;
  }
  // A frame number past the frames per period: the general path names the reason.
  auto out_of_range = frame(kSrcA, 101);
  const uint32_t too_big = static_cast<uint32_t>(test::kTiming.frames_per_period);
  std::memcpy(out_of_range.data() + 42, &too_big, 4);
  EXPECT_FALSE(agrees(p, out_of_range, 0));
  EXPECT_FALSE(agrees(p, frame(kSrcA, 101), 7)) << "no such stream";
}

// Random single-byte changes in the headers and the CODIF header: whatever the fast path
// accepts, the general path accepts identically.
TEST(MemoFastPath, RandomHeaderChangesNeverMakeThePathsDisagree) {
  Pair p;
  warm_up(p);
  std::mt19937 rng(20261128);
  int hits = 0;
  for (int n = 0; n < 4000; ++n) {
    auto f = frame(kSrcA, 101 + rng() % 5000);
    const std::size_t at = rng() % (42 + 64);
    f[at] = std::byte(static_cast<unsigned>(rng()));
    hits += agrees(p, f, 0) ? 1 : 0;
  }
  // Bytes parse_udp does not read and frame/seconds changes stay on the fast path.
  EXPECT_GT(hits, 400);
  EXPECT_LT(hits, 4000);
}

// One side of the comparison: two CODIF streams with a reorder window.
StreamSpec windowed(uint32_t src) {
  StreamSpec s = spec(src);
  s.ring.slots = 64;
  s.sequencer.reorder_window = 4;
  return s;
}

struct Side : test::SlotSide {
  Side() : SlotSide(windowed(kSrcA), windowed(kSrcB)) {}
};

// A random frame of stream `s`: mostly the next one, else a gap, a late or repeated frame, the
// invalid bit, other metadata, a wild time (an outlier), or one random byte of the headers
// (not the addresses or ports: a frame moved to the other stream is a no_stream reject on a
// QP but placed by the general path, by design; not CODIF word 0, whose random times would
// move the stream's timeline away from `next`).
std::vector<std::byte> random_frame(std::mt19937& rng, uint32_t src, uint64_t& next) {
  const unsigned kind = rng() % 100;
  if (kind < 70) return frame(src, next++);
  if (kind < 78) {
    next += 1 + rng() % 5;
    return frame(src, next++);
  }
  if (kind < 86) return frame(src, next - 1 - rng() % 6);
  if (kind < 89) return edited(src, next++, [](codif::Header& h) { h.invalid = true; });
  if (kind < 91) return edited(src, next++, [](codif::Header& h) { h.metadata[0] ^= 0x55; });
  if (kind < 93) return frame(src, next + 3'000'000 + rng() % 4);
  auto f = frame(src, next++);
  std::size_t at = rng() % (26 + 4 + 56);  // bytes 0-25, 38-41, 50-105
  at += at < 26 ? 0 : at < 30 ? 12 : 20;
  f[at] = std::byte(static_cast<unsigned>(rng()));
  return f;
}

TEST(MemoFastPath, OnSlotPublishesAndCountsWhatTheGeneralPathDoes) {
  Side fast, general;
  const codif::Header first = codif::at_index(test::base_header(), test::kTiming, 105);
  const int64_t start = codif::frame_start_unix_ns(first, test::kTiming);
  fast.ingest.set_start(start);  // frames 100-104 of a come before the run start
  general.ingest.set_start(start);
  std::mt19937 rng(20261128);
  std::array<uint64_t, 2> next{100, 2000};
  test::feed_both(fast, general, 6000, [&] {
    const uint32_t s = rng() % 2;
    return std::pair(s, random_frame(rng, s == 0 ? kSrcA : kSrcB, next[s]));
  });
  expect_same_output(fast, general);
  EXPECT_GT(fast.out_a.size() + fast.out_b.size(), 4000u);
  EXPECT_GT(fast.ingest.rejected(kRejectBeforeStart), 0u);
  EXPECT_GT(fast.ingest.rejected(kRejectTimelineOutlier), 0u);
  for (StreamPipeline* sp : {&fast.a, &fast.b}) {
    const SequencerStats x = sp->sequencer().stats();
    // The traffic reaches every rule.
    EXPECT_GT(x.lost, 0u);
    EXPECT_GT(x.late_placed, 0u);
    EXPECT_GT(x.duplicate + x.late_dropped, 0u);
    EXPECT_GT(x.invalid, 0u);
  }
}

// A frame that arrives on another stream's QP is rejected there (no_stream), but check_frame
// has by then decoded it against its own stream's memo and remembered its header. When that
// header is a new setup (here the epoch), the stream's next such frame hits the head memo while
// its sequencer still runs the old segment: the head memo's SignatureNote must have been reset
// with the memo, so the frame is compared in full and held back as an outlier (the first of a
// resync's confirmation), never placed in order as the old setup's.
TEST(MemoFastPath, AMemoMovedByAFrameOnAnotherQpIsComparedAgainWithTheSegment) {
  Side side;
  for (uint64_t i = 2000; i < 2020; ++i)
    into_slot(side.ingest, 1, frame(kSrcB, i));
  const auto moved = edited(kSrcB, 2020, [](codif::Header& h) { ++h.epoch; });
  into_slot(side.ingest, 0, moved);  // b's frame on a's QP
  EXPECT_EQ(side.ingest.rejected(kRejectNoStream), 1u);
  into_slot(side.ingest, 1, moved);  // and then on b's own
  side.drain();
  EXPECT_EQ(side.ingest.rejected(kRejectTimelineOutlier), 1u);
  const SequencerStats b = side.b.sequencer().stats();
  EXPECT_EQ(b.received, 20u);
  EXPECT_EQ(b.outliers, 1u);
  const codif::Header last = codif::at_index(test::base_header(), test::kTiming, 2019);
  EXPECT_EQ(b.last_index, codif::absolute_index(last, test::kTiming));
}

}  // namespace
}  // namespace rocecap::capture
