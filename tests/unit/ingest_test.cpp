#include "capture/ingest.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "capture/codif/header.hpp"
#include "ingest_slots.hpp"
#include "test_frames.hpp"

namespace rocecap::capture {
namespace {

using test::edited;
using test::frame;
using test::into_slot;
using test::kGroup;
using test::kPayload;
using test::kPort;
using test::kSrcA;
using test::kSrcB;

StreamSpec spec(uint32_t src, uint32_t slots = 64, uint32_t window = 4) {
  StreamSpec s;
  s.key = {kGroup, kPort, src};
  s.ring.slots = slots;
  s.ring.header_slot_bytes = 128;
  s.ring.payload_slot_bytes = kPayload;
  s.ring.memory.huge_pages = memory::Want::no;
  s.ring.memory.lock = memory::Want::no;
  s.sequencer.reorder_window = window;
  return s;
}

struct Fixture : ::testing::Test {
  StreamPipeline a{spec(kSrcA)}, b{spec(kSrcB)};
  Ingest ingest{{&a, &b}, true};

  void feed(const std::vector<std::byte>& f, int64_t ts = 0) { ingest.on_frame(f, f.size(), ts); }
  // Published frame indices of a stream, releasing the slots.
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

TEST_F(Fixture, PlacesEachStreamInItsRingScatteredAtTheSplit) {
  for (uint64_t i = 100; i < 110; ++i)
    feed(frame(kSrcA, i), 1000 + int64_t(i)), feed(frame(kSrcB, i));
  ingest.flush_all();
  SlotId id;
  ASSERT_TRUE(a.ring().pop(id));
  const SlotMeta& m = a.ring().meta(id);
  const auto f = frame(kSrcA, 100);
  EXPECT_EQ(m.frame_index, 100u);
  EXPECT_EQ(m.timestamp_ns, 1100);
  EXPECT_EQ(m.wire_bytes, f.size());
  EXPECT_EQ(m.header_bytes, 128u);
  EXPECT_EQ(m.payload_bytes, f.size() - 128);
  EXPECT_EQ(m.udp_payload_offset, 42u);
  EXPECT_TRUE(m.flags & kSlotSegmentStart);
  EXPECT_EQ(0, std::memcmp(a.ring().header(id).data(), f.data(), 128));
  EXPECT_EQ(0, std::memcmp(a.ring().payload(id).data(), f.data() + 128, f.size() - 128));
  a.ring().release(id);
  EXPECT_EQ(drain(a), (std::vector<uint64_t>{101, 102, 103, 104, 105, 106, 107, 108, 109}));
  EXPECT_EQ(drain(b).size(), 10u);
  EXPECT_EQ(a.sequencer().stats().received, 10u);
  EXPECT_EQ(ingest.frames_seen(), 20u);
}

TEST_F(Fixture, RejectsWithTheRightReasonAndPlacesNothing) {
  auto truncated = frame(kSrcA, 1);
  truncated.resize(30);
  feed(truncated);
  feed(frame(0xC0000263, 1));         // foreign source
  feed(frame(kSrcA, 2, 0x12345678));  // bad sync
  auto short_udp = frame(kSrcA, 3);   // CODIF says 1024 data bytes, UDP has 1016
  short_udp.resize(short_udp.size() - 8);
  short_udp[17] = std::byte(std::to_integer<unsigned>(short_udp[17]) - 8);
  short_udp[39] = std::byte(std::to_integer<unsigned>(short_udp[39]) - 8);
  feed(short_udp);
  const auto whole = frame(kSrcA, 4);
  ingest.on_frame(std::span(whole).first(200), whole.size(), 0);  // snaplen cut
  EXPECT_EQ(ingest.rejected(reject_index(capture::net::ParseError::truncated)), 1u);
  EXPECT_EQ(ingest.rejected(kRejectNoStream), 1u);
  EXPECT_EQ(ingest.rejected(reject_index(capture::codif::Invalid::bad_sync)), 1u);
  EXPECT_EQ(ingest.rejected(reject_index(capture::codif::Invalid::size_mismatch)), 1u);
  EXPECT_EQ(ingest.rejected(kRejectSnapTruncated), 1u);
  ingest.flush_all();
  EXPECT_TRUE(drain(a).empty());
  EXPECT_EQ(a.ring().stats().taken, 0u);
  EXPECT_EQ(reject_name(kRejectNoStream), "no_stream");
  EXPECT_EQ(reject_name(reject_index(capture::codif::Invalid::bad_sync)), "bad_sync");
}

// A UDP payload too short for a CODIF header was counted as bad_sync: a different fault
// (a sender cutting frames), so it has its own reason.
TEST_F(Fixture, PayloadShorterThanACodifHeaderIsShortPayload) {
  const auto whole = frame(kSrcA, 1);
  capture::net::UdpFrameSpec spec;
  spec.dst_mac = capture::net::multicast_mac(kGroup);
  spec.src_ip = kSrcA;
  spec.dst_ip = kGroup;
  spec.src_port = 40000;
  spec.dst_port = kPort;
  for (std::size_t payload : {std::size_t{0}, std::size_t{40}, std::size_t{63}}) {
    std::vector<std::byte> f(capture::net::udp_header_bytes(spec) + payload);
    capture::net::write_udp_headers(spec, payload, f);
    std::memcpy(f.data() + 42, whole.data() + 42, payload);  // the start of a valid header
    feed(f);
  }
  EXPECT_EQ(ingest.rejected(kRejectShortPayload), 3u);
  EXPECT_EQ(ingest.rejected(reject_index(capture::codif::Invalid::bad_sync)), 0u);
  EXPECT_EQ(reject_name(kRejectShortPayload), "short_payload");
  EXPECT_EQ(a.ring().stats().taken, 0u);
}

// One frame with a wild `seconds` field: rejected as timeline_outlier, its slot recycled, and
// the stream's frames published in time order around it (before, it resynced the stream twice
// and was written out of order).
TEST_F(Fixture, AFrameOffTheTimelineIsRejectedAsAnOutlier) {
  for (uint64_t i = 100; i < 105; ++i)
    feed(frame(kSrcA, i));
  feed(frame(kSrcA, 100 + 3'600'000'000ull));  // 1000 frames/s: 41 days later
  for (uint64_t i = 105; i < 110; ++i)
    feed(frame(kSrcA, i));
  ingest.flush_all();
  EXPECT_EQ(drain(a), (std::vector<uint64_t>{100, 101, 102, 103, 104, 105, 106, 107, 108, 109}));
  EXPECT_EQ(ingest.rejected(kRejectTimelineOutlier), 1u);
  EXPECT_EQ(reject_name(kRejectTimelineOutlier), "timeline_outlier");
  const SequencerStats st = a.sequencer().stats();
  EXPECT_EQ(st.resync, 0u);
  EXPECT_EQ(st.received, 10u);
  EXPECT_EQ(st.lost, 0u);
  EXPECT_EQ(a.ring().stats().returned, 1u);  // the outlier's slot, given back
  EXPECT_EQ(ingest.frames_seen(), 11u);
}

// run.start: frames before the start time are rejected as before_start; each stream begins at
// its first frame at or after it (a start inside a frame's span begins with the next frame).
int64_t start_of(uint32_t src, uint64_t index) {
  const auto f = frame(src, index);
  capture::codif::Header h;
  EXPECT_TRUE(capture::codif::decode(std::span<const std::byte, 64>(f.data() + 42, 64),
                                     capture::codif::SyncSet::defaults(), h));
  capture::codif::Timing t;
  EXPECT_EQ(capture::codif::validate(h, f.size() - 42, t), capture::codif::Invalid::ok);
  return capture::codif::frame_start_unix_ns(h, t);
}

TEST_F(Fixture, FramesBeforeTheRunStartAreRejectedAndEveryStreamBeginsAtIt) {
  ingest.set_start(start_of(kSrcA, 105));
  for (uint64_t i = 100; i < 110; ++i)
    feed(frame(kSrcA, i));
  for (uint64_t i = 103; i < 108; ++i)
    feed(frame(kSrcB, i));
  ingest.flush_all();
  EXPECT_EQ(drain(a), (std::vector<uint64_t>{105, 106, 107, 108, 109}));
  EXPECT_EQ(drain(b), (std::vector<uint64_t>{105, 106, 107}));
  EXPECT_EQ(ingest.rejected(kRejectBeforeStart), 7u);
  EXPECT_EQ(reject_name(kRejectBeforeStart), "before_start");
  EXPECT_EQ(a.sequencer().stats().received, 5u);
  EXPECT_EQ(a.ring().stats().returned, 5u);  // the early frames' slots, given back
  EXPECT_EQ(ingest.frames_seen(), 15u);
}

TEST_F(Fixture, AStartInsideAFrameBeginsWithTheNextFrame) {
  ingest.set_start(start_of(kSrcA, 105) + 1);
  for (uint64_t i = 100; i < 110; ++i)
    feed(frame(kSrcA, i));
  ingest.flush_all();
  EXPECT_EQ(drain(a), (std::vector<uint64_t>{106, 107, 108, 109}));
  EXPECT_EQ(ingest.rejected(kRejectBeforeStart), 6u);
}

// check_frame remembers a stream's last accepted header and takes the next one from there
// when only frame and seconds differ: every other change must still get the full check.
TEST_F(Fixture, HeadersDifferingFromTheLastAcceptedOneAreCheckedInFull) {
  for (uint64_t i = 997; i < 1000; ++i)
    feed(frame(kSrcA, i));
  feed(edited(kSrcA, 1000,
              [](capture::codif::Header& h) { h.frame = 1000; }));  // frame >= frames per period
  feed(edited(kSrcA, 1000,
              [](capture::codif::Header& h) { h.nchan = 3; }));  // 8192 bits / 24: fractional
  feed(edited(kSrcA, 1000, [](capture::codif::Header& h) { h.invalid = true; }));
  feed(edited(kSrcA, 1001, [](capture::codif::Header& h) { h.metadata[1] = 7; }));
  feed(frame(kSrcA, 1002));  // next period: seconds 1, frame 2
  EXPECT_EQ(ingest.rejected(reject_index(capture::codif::Invalid::frame_out_of_range)), 1u);
  EXPECT_EQ(ingest.rejected(reject_index(capture::codif::Invalid::fractional_samples)), 1u);
  ingest.flush_all();
  std::vector<uint64_t> indices;
  std::vector<bool> invalid;
  SlotId id;
  while (a.ring().pop(id)) {
    indices.push_back(a.ring().meta(id).frame_index);
    invalid.push_back((a.ring().meta(id).flags & kSlotInvalidBit) != 0);
    a.ring().release(id);
  }
  EXPECT_EQ(indices, (std::vector<uint64_t>{997, 998, 999, 1000, 1001, 1002}));
  EXPECT_EQ(invalid, (std::vector<bool>{false, false, false, true, false, false}));
  const SequencerStats st = a.sequencer().stats();
  EXPECT_EQ(st.invalid, 1u);
  EXPECT_EQ(st.lost, 0u);
  EXPECT_EQ(st.resync, 0u);
  EXPECT_EQ(st.last_time_ns - st.first_time_ns, 5'000'000);  // 5 frames of 1 ms
}

std::vector<std::byte> with(std::vector<std::byte> f, std::size_t at, unsigned value) {
  f[at] = std::byte(value);
  return f;
}

// on_slot takes the Ethernet/IPv4/UDP headers of the stream's last accepted frame from a
// memo when only bytes parse_udp does not read differ; any other change is parsed in full.
TEST_F(Fixture, SlotHeadersDifferingInReadBytesAreParsedInFull) {
  into_slot(ingest, 0, frame(kSrcA, 100));
  auto other_unread = frame(kSrcA, 101);
  for (std::size_t at : {15, 18, 19, 22, 24, 25, 40, 41})  // TOS, id, TTL, checksums
    other_unread[at] = std::byte(0x5A);
  into_slot(ingest, 0, other_unread);
  into_slot(ingest, 0, with(frame(kSrcA, 102), 20, 0x20));  // more fragments
  into_slot(ingest, 0, with(frame(kSrcA, 103), 23, 6));     // TCP
  into_slot(ingest, 0, frame(kSrcB, 104));                  // b's frame on a's QP
  auto udp_len = frame(kSrcA, 105);
  udp_len[39] = std::byte(std::to_integer<unsigned>(udp_len[39]) - 1);
  into_slot(ingest, 0, udp_len);
  auto short_wire = frame(kSrcA, 106);  // same headers, a shorter completion
  short_wire.resize(short_wire.size() - 4);
  into_slot(ingest, 0, short_wire);
  into_slot(ingest, 0, frame(kSrcA, 107));
  EXPECT_EQ(ingest.rejected(reject_index(capture::net::ParseError::fragment)), 1u);
  EXPECT_EQ(ingest.rejected(reject_index(capture::net::ParseError::not_udp)), 1u);
  EXPECT_EQ(ingest.rejected(kRejectNoStream), 1u);
  EXPECT_EQ(ingest.rejected(reject_index(capture::net::ParseError::bad_udp_length)), 1u);
  EXPECT_EQ(ingest.rejected(reject_index(capture::net::ParseError::bad_ip_length)), 1u);
  ingest.flush_all();
  EXPECT_EQ(drain(a), (std::vector<uint64_t>{100, 101, 107}));
  EXPECT_EQ(ingest.frames_seen(), 8u);
}

TEST_F(Fixture, LateFramesArePutBackInOrderAndDuplicatesRecycled) {
  for (uint64_t i : {10, 12, 11, 13, 13, 14})
    feed(frame(kSrcA, i));
  ingest.flush_all();
  SlotId id;
  std::vector<uint64_t> order;
  bool late_seen = false;
  while (a.ring().pop(id)) {
    order.push_back(a.ring().meta(id).frame_index);
    if (a.ring().meta(id).frame_index == 11) late_seen = a.ring().meta(id).flags & kSlotLate;
    a.ring().release(id);
  }
  EXPECT_EQ(order, (std::vector<uint64_t>{10, 11, 12, 13, 14}));
  EXPECT_TRUE(late_seen);
  EXPECT_EQ(a.sequencer().stats().duplicate, 1u);
  EXPECT_EQ(a.sequencer().stats().lost, 0u);
  EXPECT_EQ(a.ring().stats().returned, 1u);  // the duplicate's slot went straight back
}

TEST_F(Fixture, ArrivalQueueRecordsPlacedFramesInArrivalOrder) {
  feed(frame(kSrcA, 1));
  feed(frame(kSrcB, 7));
  feed(frame(kSrcA, 1));  // duplicate: not placed, not recorded
  feed(frame(kSrcA, 3));
  ArrivalRef r;
  std::vector<std::pair<uint32_t, uint64_t>> seen;
  common::SpscQueue<ArrivalRef>* q = ingest.arrivals();
  ASSERT_NE(q, nullptr);
  while (q->pop(r)) {
    seen.emplace_back(r.stream, ingest.streams()[r.stream]->ring().meta(r.slot).frame_index);
  }
  EXPECT_EQ(seen, (std::vector<std::pair<uint32_t, uint64_t>>{{0, 1}, {1, 7}, {0, 3}}));
}

TEST(Ingest, FullRingDropsAreCountedAndCaptureRecovers) {
  StreamPipeline a{spec(kSrcA, 8, 1)};
  Ingest ingest{{&a}, false};
  for (uint64_t i = 0; i < 20; ++i) {
    const auto f = frame(kSrcA, i);
    ingest.on_frame(f, f.size(), 0);
  }
  EXPECT_EQ(a.ring().stats().ring_full_drops, 12u);
  SlotId id;
  while (a.ring().pop(id))
    a.ring().release(id);
  const auto f = frame(kSrcA, 20);
  ingest.on_frame(f, f.size(), 0);
  EXPECT_EQ(a.ring().stats().ring_full_drops, 12u);
  EXPECT_EQ(a.sequencer().stats().received, 9u);
}

TEST(Ingest, IdleStreamsAreFlushedOthersKeepTheirWindow) {
  StreamPipeline a{spec(kSrcA)}, b{spec(kSrcB)};
  Ingest ingest{{&a, &b}, false};
  ingest.set_tick(1);
  auto fa = frame(kSrcA, 5);
  ingest.on_frame(fa, fa.size(), 0);
  ingest.set_tick(2);
  auto fb = frame(kSrcB, 5);
  ingest.on_frame(fb, fb.size(), 0);
  ingest.flush_idle(1);  // a last heard at tick 1: idle; b at tick 2: not
  EXPECT_EQ(a.sequencer().pending(), 0u);
  EXPECT_EQ(b.sequencer().pending(), 1u);
}

TEST(Ingest, UdpFormatStreamsPublishInArrivalOrderWithoutCodifChecks) {
  StreamSpec s = spec(kSrcA);
  s.format = StreamFormat::udp;
  StreamPipeline a{s};
  Ingest ingest{{&a}, false};
  for (uint32_t sync : {0x11111111u, 0x22222222u}) {
    const auto f = frame(kSrcA, 3, sync);
    ingest.on_frame(f, f.size(), 0);
  }
  SlotId id;
  ASSERT_TRUE(a.ring().pop(id));
  EXPECT_EQ(a.ring().meta(id).frame_index, 0u);
  EXPECT_TRUE(a.ring().meta(id).flags & kSlotSegmentStart);
  ASSERT_TRUE(a.ring().pop(id));
  EXPECT_EQ(a.ring().meta(id).frame_index, 1u);
}

}  // namespace
}  // namespace rocecap::capture
