// Ingest with VDIF streams (doc/vdif.md): one flow's threads routed to their own streams, an
// unlisted thread rejected, VTP numbers counted per flow, the sequencer's index and byte count
// for VDIF frames, and a header-form change refused.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <set>
#include <vector>

#include "capture/ingest.hpp"
#include "capture/net/udp_builder.hpp"
#include "capture/reject_reason.hpp"
#include "capture/vdif/header.hpp"
#include "test_frames.hpp"

namespace rocecap::capture {
namespace {

constexpr uint32_t kGroup = 0xEF110001, kSrc = 0xC0000201;
constexpr uint16_t kPort = 36001;
constexpr uint64_t kFps = 100;
constexpr std::size_t kData = 256;

StreamSpec spec(uint32_t thread) {
  return test::vdif_spec(kSrc, true, thread);
}

// A VTP + VDIF datagram of frame `index` of `thread`.
std::vector<std::byte> datagram(uint64_t psn, uint16_t thread, uint64_t index, bool legacy = false,
                                uint8_t epoch = 50) {
  test::VdifDatagram d{kGroup, kSrc, kPort, kFps, kData, epoch, legacy};
  return test::vdif_datagram(d, psn, thread, index);
}

struct VdifIngest : ::testing::Test {
  StreamPipeline t0{spec(0)}, t3{spec(3)};
  Ingest ingest{{&t0, &t3}, false};
  void feed(const std::vector<std::byte>& f) { ingest.on_frame(f, f.size(), 0); }
  // Frames rejected under the reason of that name (manifest and metrics label).
  uint64_t rejected_as(std::string_view name) const {
    uint64_t n = 0;
    for (std::size_t i = 0; i < kRejectReasonCount; ++i)
      n += reject_name(i) == name ? ingest.rejected(i) : 0;
    return n;
  }
  std::vector<uint64_t> drain(StreamPipeline& sp) {
    std::vector<uint64_t> out;
    SlotId id;
    while (sp.ring().pop(id)) {
      out.push_back(sp.ring().meta(id).frame_index);
      sp.ring().release(id);
    }
    return out;
  }
};

TEST_F(VdifIngest, ThreadsGoToTheirStreamsAndVtpGapsAreCounted) {
  uint64_t psn = 0;
  for (uint64_t i = 9998; i < 10003; ++i) {  // crosses second 100
    feed(datagram(psn++, 0, i));
    feed(datagram(psn++, 3, i));
    feed(datagram(psn++, 5, i));  // not listed
  }
  psn += 2;                           // two packets lost on the way
  feed(datagram(psn, 0, 10004));      // frame 10003 of thread 0 lost
  feed(datagram(psn - 1, 3, 10004));  // out of order
  ingest.flush_all();
  EXPECT_EQ(drain(t0), (std::vector<uint64_t>{9998, 9999, 10000, 10001, 10002, 10004}));
  EXPECT_EQ(drain(t3), (std::vector<uint64_t>{9998, 9999, 10000, 10001, 10002, 10004}));
  EXPECT_EQ(ingest.rejected(reject_index(vdif::Invalid::unlisted_thread)), 5u);
  EXPECT_EQ(reject_name(reject_index(vdif::Invalid::unlisted_thread)), "vdif_unlisted_thread");
  EXPECT_EQ(t0.vtp.skipped.get(), 1u);  // kept on the flow's first stream; 16 came late
  EXPECT_EQ(t0.vtp.out_of_order.get(), 1u);
  EXPECT_EQ(t3.vtp.skipped.get(), 0u);
  const SequencerStats s = t0.sequencer().stats();
  EXPECT_EQ(s.received, 6u);
  EXPECT_EQ(s.lost, 1u);
  EXPECT_EQ(s.bytes, 6u * (32 + kData));  // VDIF frame bytes, VTP number excluded
}

// The VTP `skipped` count is the numbers never seen (doc/vdif.md): a number skipped and then
// arriving late is taken back, a repeat is not. 100 numbers with 18 lost, 15 pairs swapped and
// 10 repeated: main reported 33 skipped (every swap counted) for 18 missing.
TEST_F(VdifIngest, VtpSkippedCountsTheNumbersNeverSeen) {
  std::vector<uint64_t> order;
  for (uint64_t n = 0; n < 100; ++n)
    order.push_back(n);
  const std::set<uint64_t> lost{3,  7,  11, 19, 23, 29, 31, 37, 41,
                                43, 47, 53, 59, 61, 67, 71, 73, 79};
  std::vector<uint64_t> sent;
  for (uint64_t n : order)
    if (lost.count(n) == 0) sent.push_back(n);
  for (std::size_t i = 1; i + 1 < sent.size() && i < 60; i += 4)  // 15 disjoint swaps
    std::swap(sent[i], sent[i + 1]);
  for (std::size_t i = 62; i < 72; ++i)  // 10 repeats, each right after its original
    sent.insert(sent.begin() + static_cast<std::ptrdiff_t>(2 * i - 62 + 1), sent[2 * i - 62]);
  uint64_t previous = 0;
  for (uint64_t n : sent) {
    feed(datagram(n, 0, 1000 + n));
    EXPECT_GE(t0.vtp.skipped.get(), previous) << "a counter never goes back (Prometheus)";
    previous = t0.vtp.skipped.get();
  }
  ingest.flush_all();
  EXPECT_EQ(t0.vtp.skipped.get(), lost.size());
  EXPECT_EQ(t0.vtp.out_of_order.get(), 15u + 10u);
}

// Numbers count as skipped once they can no longer arrive: kWindow numbers behind the highest,
// the flow quiet for a housekeeping period (flush_idle), or the stop (flush_all). A packet later
// than that is out of order but stays counted as skipped: the count never goes back.
TEST_F(VdifIngest, VtpSkipsAreSettledBehindTheWindowWhenQuietAndAtStop) {
  constexpr uint64_t kWindow = VtpState::kWindow;
  feed(datagram(0, 0, 1000));
  feed(datagram(6, 0, 1001));  // 1-5 not (yet) seen
  EXPECT_EQ(t0.vtp.skipped.get(), 0u) << "they may still come";
  feed(datagram(2, 0, 1002));  // late: taken back before it was ever counted
  for (uint64_t n = 7; n <= 5 + kWindow; ++n)
    feed(datagram(n, 0, 1000 + n));
  EXPECT_EQ(t0.vtp.skipped.get(), 4u) << "1, 3, 4, 5: a window behind the highest";
  feed(datagram(1, 0, 1003));  // later than the window: out of order, still skipped
  EXPECT_EQ(t0.vtp.skipped.get(), 4u);
  EXPECT_EQ(t0.vtp.out_of_order.get(), 2u);
  const uint64_t next = 6 + kWindow;
  ingest.set_tick(5);
  feed(datagram(next + 3, 0, 1000 + next));  // next .. next + 2 missing
  EXPECT_EQ(t0.vtp.skipped.get(), 4u);
  ingest.set_tick(6);
  ingest.flush_idle(4);  // the flow spoke at tick 5: not quiet
  EXPECT_EQ(t0.vtp.skipped.get(), 4u);
  ingest.flush_idle(5);  // quiet since tick 5
  EXPECT_EQ(t0.vtp.skipped.get(), 7u);
  feed(datagram(next + 1, 0, 1000 + next + 1));  // after settling: out of order only
  ingest.flush_all();
  EXPECT_EQ(t0.vtp.skipped.get(), 7u);
  // A jump longer than the window counts what falls out of it at once.
  feed(datagram(next + 4 + 3 * kWindow, 0, 1000 + next + 4));
  EXPECT_EQ(t0.vtp.skipped.get(), 7u + 2 * kWindow + 1);
  ingest.flush_all();
  EXPECT_EQ(t0.vtp.skipped.get(), 7u + 3 * kWindow);
}

TEST_F(VdifIngest, RejectsWithVdifReasons) {
  feed(datagram(0, 0, 500));
  feed(datagram(1, 0, 501, /*legacy=*/true));  // 16-byte header in a 32-byte stream
  auto lying = datagram(2, 0, 502);
  lying[42 + 8 + 8] = std::byte{0x7F};  // word 2: the length field no longer matches
  feed(lying);
  auto out_of_range = datagram(3, 0, 503);
  out_of_range[42 + 8 + 4] = std::byte{static_cast<uint8_t>(kFps)};  // frame number 100 of 100
  feed(out_of_range);
  auto version7 = datagram(4, 0, 504);
  version7[42 + 8 + 11] |= std::byte{0xE0};  // word 2 bits 29-31: VDIF version 7
  feed(version7);
  ingest.flush_all();
  EXPECT_EQ(drain(t0), (std::vector<uint64_t>{500}));
  EXPECT_EQ(rejected_as("vdif_version"), 1u);
  EXPECT_EQ(ingest.rejected(reject_index(vdif::Invalid::header_form)), 1u);
  EXPECT_EQ(ingest.rejected(reject_index(vdif::Invalid::size_mismatch)), 1u);
  EXPECT_EQ(ingest.rejected(reject_index(vdif::Invalid::frame_out_of_range)), 1u);
}

// A source that moves to the next reference epoch mid-stream (the same instants, counted from
// 1 Jul instead of 1 Jan) leaves the stream's timeline: the epoch is part of the timeline
// (capture/sequencer.hpp), so the first resync_confirm - 1 = 2 frames of the new epoch are
// counted as timeline outliers, the third restarts sequencing (one resync, reason epoch) and
// from there on frames are placed again. Nothing is lost uncounted: every frame fed is either
// placed or a counted reject.
TEST_F(VdifIngest, ARefEpochChangeMidStreamResyncsWithItsFramesCounted) {
  const uint64_t half_year =
      static_cast<uint64_t>(codif::epoch_unix_seconds(51) - codif::epoch_unix_seconds(50));
  const uint64_t at = (half_year + 10) * kFps;  // 10 s after the 1 Jul boundary, in epoch 50
  uint64_t psn = 0;
  for (uint64_t i = 0; i < 5; ++i)
    feed(datagram(psn++, 0, at + i));
  for (uint64_t i = 5; i < 10; ++i)
    feed(datagram(psn++, 0, 10 * kFps + i, false, 51));
  ingest.flush_all();
  EXPECT_EQ(drain(t0),
            (std::vector<uint64_t>{at, at + 1, at + 2, at + 3, at + 4, 1007, 1008, 1009}));
  const SequencerStats s = t0.sequencer().stats();
  EXPECT_EQ(s.resync, 1u);
  EXPECT_EQ(s.outliers, 2u);
  EXPECT_EQ(s.lost, 0u);  // no fill frames across the change
  EXPECT_EQ(ingest.rejected(kRejectTimelineOutlier), 2u);
  EXPECT_EQ(s.delivered + ingest.rejected(kRejectTimelineOutlier), 10u);
}

}  // namespace
}  // namespace rocecap::capture
