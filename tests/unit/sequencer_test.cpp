#include "capture/sequencer.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "capture/ring_publisher.hpp"
#include "capture/stream_ring.hpp"
#include "ingest_slots.hpp"

namespace rocecap::capture {
namespace {

using capture::codif::Header;
using capture::codif::Timing;

// 8192-byte frames of 8192 one-channel 8-bit samples, 1000 frames per 1-second period.
constexpr uint64_t kFramesPerPeriod = 1000;
constexpr uint32_t kDataWords = 1024;

Header base_header() {
  Header h;
  h.epoch = 48;  // 2024-01-01
  h.nbits = 8;
  h.nchan = 1;
  h.period = 1;
  h.data_words = kDataWords;
  h.total_samples = 8192 * kFramesPerPeriod;
  h.version = 3;
  return h;
}

Timing timing_of(const Header& h) {
  Timing t;
  EXPECT_EQ(capture::codif::validate(h, h.frame_bytes(), t), capture::codif::Invalid::ok);
  return t;
}

Header at(uint64_t index, Header base = base_header()) {
  base.seconds = static_cast<uint32_t>(index / kFramesPerPeriod);
  base.frame = static_cast<uint32_t>(index % kFramesPerPeriod);
  return base;
}

class Recorder final : public DeliverySink {
 public:
  void deliver(const Delivery& d) noexcept override { got.push_back(d); }
  std::vector<uint64_t> indices() const {
    std::vector<uint64_t> v;
    for (const Delivery& d : got)
      v.push_back(d.index);
    return v;
  }
  std::vector<Delivery> got;
};

struct Fixture {
  explicit Fixture(SequencerConfig c) : seq(c, sink) {}
  static SequencerConfig config(uint32_t window, uint32_t history = 64, uint64_t resync = 100'000);
  Verdict feed(uint64_t index, const Header& base = base_header()) {
    const Header h = at(index, base);
    return seq.on_frame(h, timing_of(h), static_cast<uint32_t>(index * 10 + 1));
  }
  std::vector<Decision> feed_all(const std::vector<uint64_t>& indices) {
    std::vector<Decision> out;
    for (uint64_t i : indices)
      out.push_back(feed(i).decision);
    return out;
  }
  std::vector<GapEvent> gaps() {
    std::vector<GapEvent> out;
    GapEvent e;
    while (seq.pop_gap(e))
      out.push_back(e);
    return out;
  }
  Recorder sink;
  Sequencer seq;
};

SequencerConfig Fixture::config(uint32_t window, uint32_t history, uint64_t resync) {
  SequencerConfig c;
  c.reorder_window = window;
  c.history = history;
  c.resync_frames = resync;
  c.gap_capacity = 64;
  return c;
}

// Flushes both and expects the same deliveries, in the same order, from each.
void flush_and_expect_same_deliveries(Fixture& x, Fixture& y) {
  x.seq.flush();
  y.seq.flush();
  ASSERT_EQ(x.sink.got.size(), y.sink.got.size());
  for (std::size_t k = 0; k < x.sink.got.size(); ++k) {
    EXPECT_EQ(x.sink.got[k].index, y.sink.got[k].index) << k;
    EXPECT_EQ(x.sink.got[k].tag, y.sink.got[k].tag) << k;
    EXPECT_EQ(x.sink.got[k].segment_start, y.sink.got[k].segment_start) << k;
  }
}

std::vector<uint64_t> range(uint64_t first, uint64_t last) {
  std::vector<uint64_t> v;
  for (uint64_t i = first; i <= last; ++i)
    v.push_back(i);
  return v;
}

// 2024-01-01T00:00:00Z, independent of the codec's epoch arithmetic.
constexpr int64_t kEpoch48Ns = 1704067200LL * 1'000'000'000;
constexpr int64_t kFrameNs = 1'000'000;  // 1 s / 1000 frames

TEST(Sequencer, InOrderFramesAreDeliveredOnceOutsideTheWindow) {
  Fixture f(Fixture::config(4));
  const auto decisions = f.feed_all(range(100, 109));
  EXPECT_EQ(decisions.front(), Decision::first);
  for (std::size_t k = 1; k < decisions.size(); ++k)
    EXPECT_EQ(decisions[k], Decision::in_order);
  EXPECT_EQ(f.sink.indices(), range(100, 105));  // 106..109 still inside the window
  EXPECT_EQ(f.seq.pending(), 4u);
  f.seq.flush();
  EXPECT_EQ(f.seq.pending(), 0u);
  EXPECT_EQ(f.sink.indices(), range(100, 109));
  EXPECT_TRUE(f.sink.got[0].segment_start);
  EXPECT_FALSE(f.sink.got[1].segment_start);
  EXPECT_EQ(f.sink.got[3].tag, 1031u);
  const SequencerStats s = f.seq.stats();
  EXPECT_EQ(s.received, 10u);
  EXPECT_EQ(s.bytes, 10u * 8256u);
  EXPECT_EQ(s.delivered, 10u);
  EXPECT_EQ(s.lost, 0u);
  EXPECT_EQ(s.first_index, 100u);
  EXPECT_EQ(s.last_index, 109u);
  EXPECT_EQ(s.first_time_ns, kEpoch48Ns + 100 * kFrameNs);
  EXPECT_EQ(s.last_time_ns, kEpoch48Ns + 109 * kFrameNs);
  EXPECT_EQ(s.gap_events, 0u);
  EXPECT_TRUE(f.gaps().empty());
}

// The verbs path hands the sequencer its own sink as the sink's final type (on_frame_at with a
// sink: RingPublisher's deliver() inlined). Over the same frames it must decide, deliver and
// count exactly what the virtual call does.
TEST(Sequencer, ItsOwnSinkGivenAsItsTypeDeliversAndCountsWhatTheVirtualCallDoes) {
  Fixture by_vtable(Fixture::config(8)), by_type(Fixture::config(8));
  std::mt19937_64 rng(30);
  uint64_t next = 1000;
  for (int k = 0; k < 4000; ++k) {
    const uint64_t r = rng() % 100;
    const uint64_t index = r < 80   ? next++                           // in order
                           : r < 88 ? (next += rng() % 5) - 1          // a gap
                           : r < 96 ? next - 1 - rng() % 12            // late or repeated
                                    : (next += 50 + rng() % 100) - 1;  // a long gap
    const Header h = at(index);
    const Timing t = timing_of(h);
    const auto tag = static_cast<uint32_t>(k);
    const Verdict a = by_vtable.seq.on_frame(h, t, tag);
    const Verdict b = by_type.seq.on_frame_at(h, t, h.frame, h.seconds, tag, by_type.sink);
    ASSERT_EQ(a.decision, b.decision) << "frame " << k;
    ASSERT_EQ(a.index, b.index) << "frame " << k;
  }
  flush_and_expect_same_deliveries(by_vtable, by_type);
  const SequencerStats x = by_vtable.seq.stats(), y = by_type.seq.stats();
  EXPECT_GT(x.delivered, 3000u);
  EXPECT_GT(x.lost, 0u);
  EXPECT_GT(x.duplicate + x.late_placed + x.late_dropped, 0u);
  test::expect_same_sequencer(x, y);
}

// A SignatureNote lets the in-order path skip the signature compare for a header it has
// already confirmed (the verbs lane keeps one per head memo). A caller here keeps one note for
// each of two headers that differ in nchan and switches between them, so the sequencer resyncs
// back and forth while each note still holds what it confirmed: a note must never vouch for a
// segment other than the one it was confirmed in. Every verdict, delivery and count must equal
// those of the same frames without notes.
TEST(Sequencer, ASignatureNoteDecidesWhatTheFullCompareDoesAcrossResyncs) {
  Fixture plain(Fixture::config(8, 64, 1000)), noted(Fixture::config(8, 64, 1000));
  Header other = base_header();
  other.nchan = 2;
  other.total_samples /= 2;
  const Header bases[2] = {base_header(), other};
  SignatureNote notes[2];
  std::mt19937_64 rng(31);
  uint64_t next = 1000;
  int which = 0;
  for (int k = 0; k < 6000; ++k) {
    const uint64_t r = rng() % 100;
    if (r < 2) which ^= 1;  // the instrument's setup changes: 3 frames in a row confirm it
    const uint64_t index = r < 85   ? next++                   // in order
                           : r < 92 ? (next += rng() % 4) - 1  // a gap
                                    : next - 1 - rng() % 10;   // late or repeated
    const bool stray = r >= 2 && r < 4;  // now and then a frame of the other setup alone
    const int use = stray ? which ^ 1 : which;
    const Header h = at(index, bases[use]);
    const Timing t = timing_of(h);
    const auto tag = static_cast<uint32_t>(k);
    const Verdict a = plain.seq.on_frame_at(h, t, h.frame, h.seconds, tag, plain.sink);
    const Verdict b = noted.seq.on_frame_at(h, t, h.frame, h.seconds, tag, noted.sink, &notes[use]);
    ASSERT_EQ(a.decision, b.decision) << "frame " << k;
    ASSERT_EQ(a.reason, b.reason) << "frame " << k;
    ASSERT_EQ(a.index, b.index) << "frame " << k;
  }
  flush_and_expect_same_deliveries(plain, noted);
  const SequencerStats x = plain.seq.stats(), y = noted.seq.stats();
  EXPECT_GT(x.resync, 20u);  // the notes were tested across many segments
  EXPECT_GT(x.outliers, 40u);
  EXPECT_GT(x.delivered, 4000u);
  EXPECT_NE(notes[0].segment, 0u);  // both notes were confirmed at least once
  EXPECT_NE(notes[1].segment, 0u);
  test::expect_same_sequencer(x, y);
}

TEST(Sequencer, GapCountsLostAtOnceAndEmitsOneEventWithItsTime) {
  Fixture f(Fixture::config(4));
  const auto d = f.feed_all({0, 1, 2, 6, 7});
  EXPECT_EQ(d[3], Decision::gap);
  EXPECT_EQ(d[4], Decision::in_order);
  EXPECT_EQ(f.seq.stats().lost, 3u);  // timely, before the gap left the window
  f.seq.flush();
  EXPECT_EQ(f.sink.indices(), (std::vector<uint64_t>{0, 1, 2, 6, 7}));
  const auto gaps = f.gaps();
  ASSERT_EQ(gaps.size(), 1u);
  EXPECT_EQ(gaps[0].first_index, 3u);
  EXPECT_EQ(gaps[0].count, 3u);
  EXPECT_EQ(gaps[0].first_time_ns, kEpoch48Ns + 3 * kFrameNs);
  const SequencerStats s = f.seq.stats();
  EXPECT_EQ(s.lost, 3u);
  EXPECT_EQ(s.gap_events, 1u);
}

TEST(Sequencer, GapAcrossAPeriodBoundaryHasTheRightTime) {
  Fixture f(Fixture::config(2));
  f.feed_all({998, 1003, 1004});
  f.seq.flush();
  const auto gaps = f.gaps();
  ASSERT_EQ(gaps.size(), 1u);
  EXPECT_EQ(gaps[0].first_index, 999u);
  EXPECT_EQ(gaps[0].count, 4u);
  EXPECT_EQ(gaps[0].first_time_ns, kEpoch48Ns + 999 * kFrameNs);
}

TEST(Sequencer, LateFrameInsideWindowIsPlacedInTimeOrderAndSplitsTheGap) {
  Fixture f(Fixture::config(8));
  const auto d = f.feed_all({0, 1, 5, 3, 6, 7});
  EXPECT_EQ(d[2], Decision::gap);
  EXPECT_EQ(d[3], Decision::late_placed);
  f.seq.flush();
  EXPECT_EQ(f.sink.indices(), (std::vector<uint64_t>{0, 1, 3, 5, 6, 7}));
  EXPECT_EQ(f.sink.got[2].tag, 31u);  // the late frame's own slot, in its place in time
  const auto gaps = f.gaps();
  ASSERT_EQ(gaps.size(), 2u);
  EXPECT_EQ(gaps[0].first_index, 2u);
  EXPECT_EQ(gaps[0].count, 1u);
  EXPECT_EQ(gaps[1].first_index, 4u);
  EXPECT_EQ(gaps[1].count, 1u);
  const SequencerStats s = f.seq.stats();
  EXPECT_EQ(s.lost, 2u);
  EXPECT_EQ(s.late_placed, 1u);
  EXPECT_EQ(s.delivered, 6u);
}

TEST(Sequencer, LateFillingTheWholeGapLeavesNoGapEvent) {
  Fixture f(Fixture::config(8));
  f.feed_all({10, 13, 12, 11, 14});
  EXPECT_EQ(f.seq.stats().lost, 0u);
  f.seq.flush();
  EXPECT_EQ(f.sink.indices(), range(10, 14));
  EXPECT_TRUE(f.gaps().empty());
}

TEST(Sequencer, LateFrameBehindWindowIsDroppedAndStaysLost) {
  Fixture f(Fixture::config(4));
  std::vector<uint64_t> order = {0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 3};
  const auto d = f.feed_all(order);
  EXPECT_EQ(d.back(), Decision::late_dropped);
  f.seq.flush();
  EXPECT_EQ(f.sink.indices(), (std::vector<uint64_t>{0, 1, 2, 4, 5, 6, 7, 8, 9, 10}));
  const auto gaps = f.gaps();
  ASSERT_EQ(gaps.size(), 1u);
  EXPECT_EQ(gaps[0].first_index, 3u);
  EXPECT_EQ(gaps[0].count, 1u);
  const SequencerStats s = f.seq.stats();
  EXPECT_EQ(s.lost, 1u);
  EXPECT_EQ(s.late_dropped, 1u);
  EXPECT_EQ(s.late_placed, 0u);
}

TEST(Sequencer, WindowOfOneNeverPlacesALateFrame) {
  Fixture f(Fixture::config(1));
  const auto d = f.feed_all({0, 2, 1, 3});
  EXPECT_EQ(d[2], Decision::late_dropped);
  f.seq.flush();
  EXPECT_EQ(f.sink.indices(), (std::vector<uint64_t>{0, 2, 3}));
  EXPECT_EQ(f.seq.stats().lost, 1u);
}

TEST(Sequencer, DuplicatesInsideWindowBehindWindowAndFarPast) {
  Fixture f(Fixture::config(4, 64));
  f.feed_all(range(0, 20));
  EXPECT_EQ(f.feed(20).decision, Decision::duplicate);  // the highest, pending
  EXPECT_EQ(f.feed(18).decision, Decision::duplicate);  // pending inside the window
  EXPECT_EQ(f.feed(5).decision, Decision::duplicate);   // delivered, inside the history
  f.feed_all(range(21, 200));
  // 100 frames back: beyond the 64-frame history, nothing is known any more.
  EXPECT_EQ(f.feed(100).decision, Decision::late_dropped);
  f.seq.flush();
  EXPECT_EQ(f.sink.indices(), range(0, 200));  // nothing delivered twice
  const SequencerStats s = f.seq.stats();
  EXPECT_EQ(s.duplicate, 3u);
  EXPECT_EQ(s.late_dropped, 1u);
  EXPECT_EQ(s.received, 205u);
  EXPECT_EQ(s.delivered, 201u);
  EXPECT_EQ(s.lost, 0u);
}

TEST(Sequencer, FrameBeforeTheFirstIsDroppedNotPlaced) {
  Fixture f(Fixture::config(8));
  const auto d = f.feed_all({50, 49, 51});
  EXPECT_EQ(d[1], Decision::late_dropped);
  f.seq.flush();
  EXPECT_EQ(f.sink.indices(), (std::vector<uint64_t>{50, 51}));
  EXPECT_EQ(f.seq.stats().first_index, 50u);
}

TEST(Sequencer, FlushThenLateFrameIsNotDeliveredOutOfOrder) {
  Fixture f(Fixture::config(8));
  f.feed_all({0, 1, 3});
  f.seq.flush();  // e.g. the stream went idle
  EXPECT_EQ(f.feed(2).decision, Decision::late_dropped);
  EXPECT_EQ(f.feed(3).decision, Decision::duplicate);
  EXPECT_EQ(f.feed(4).decision, Decision::in_order);
  f.seq.flush();
  EXPECT_EQ(f.sink.indices(), (std::vector<uint64_t>{0, 1, 3, 4}));
  EXPECT_EQ(f.seq.stats().lost, 1u);
}

TEST(Sequencer, ForwardJumpBeyondLimitResyncsOnceConfirmedWithoutCountingLoss) {
  Fixture f(Fixture::config(4, 64, 1000));
  f.feed_all(range(0, 5));
  const std::vector<uint64_t> before = f.sink.indices();  // 0 and 1 left the window of 4
  for (uint64_t i : {5000u, 5001u}) {  // not yet confirmed: outliers, nothing moves
    const Verdict v = f.feed(i);
    EXPECT_EQ(v.decision, Decision::outlier);
    EXPECT_EQ(v.reason, ResyncReason::jump_forward);
  }
  EXPECT_EQ(f.sink.indices(), before);
  EXPECT_EQ(f.seq.pending(), 4u);
  const Verdict v = f.feed(5002);  // the third in a row on the new timeline
  EXPECT_EQ(v.decision, Decision::resync);
  EXPECT_EQ(v.reason, ResyncReason::jump_forward);
  EXPECT_EQ(v.index, 5002u);
  EXPECT_EQ(f.sink.indices(), range(0, 5));  // the old segment is flushed at once
  EXPECT_EQ(f.feed(5004).decision, Decision::gap);
  EXPECT_EQ(f.feed(5003).decision, Decision::late_placed);
  EXPECT_EQ(f.feed_all({3, 4, 5}),  // now far in the past: back again, once confirmed
            (std::vector<Decision>{Decision::outlier, Decision::outlier, Decision::resync}));
  f.seq.flush();
  EXPECT_EQ(f.sink.indices(), (std::vector<uint64_t>{0, 1, 2, 3, 4, 5, 5002, 5003, 5004, 5}));
  EXPECT_TRUE(f.sink.got[0].segment_start);
  EXPECT_TRUE(f.sink.got[6].segment_start);
  EXPECT_FALSE(f.sink.got[7].segment_start);
  EXPECT_TRUE(f.sink.got[9].segment_start);
  const SequencerStats s = f.seq.stats();
  EXPECT_EQ(s.resync, 2u);
  EXPECT_EQ(s.outliers, 4u);
  EXPECT_EQ(s.received, 10u);  // outliers are not the stream's frames
  EXPECT_EQ(s.lost, 0u);
  EXPECT_EQ(s.first_index, 0u);
  EXPECT_EQ(s.last_index, 5u);
  EXPECT_TRUE(f.gaps().empty());
}

// One frame with a wild `seconds` field (a valid sync word) used to resync the stream there
// and back, and land out of time order in the file. Now it is an outlier and nothing moves.
TEST(Sequencer, ALoneOutlierIsRejectedAndTheTimelineGoesOn) {
  Fixture f(Fixture::config(4, 64, 1000));
  f.feed_all(range(0, 9));
  const Verdict v = f.feed(7'000'000);
  EXPECT_EQ(v.decision, Decision::outlier);
  EXPECT_EQ(v.reason, ResyncReason::jump_forward);
  EXPECT_FALSE(placed(v.decision));  // the caller recycles the slot
  EXPECT_EQ(f.feed(10).decision, Decision::in_order);
  EXPECT_EQ(f.feed(8'000'000).decision, Decision::outlier);  // two apart: never agreeing
  EXPECT_EQ(f.feed(9'000'000).decision, Decision::outlier);
  EXPECT_EQ(f.feed(6'000'000).decision, Decision::outlier);  // going back does not agree
  EXPECT_EQ(f.feed(11).decision, Decision::in_order);
  f.seq.flush();
  EXPECT_EQ(f.sink.indices(), range(0, 11));  // in order, nothing from the outliers
  const SequencerStats s = f.seq.stats();
  EXPECT_EQ(s.resync, 0u);
  EXPECT_EQ(s.outliers, 4u);
  EXPECT_EQ(s.received, 12u);
  EXPECT_EQ(s.lost, 0u);
  EXPECT_EQ(s.last_index, 11u);
  EXPECT_TRUE(f.gaps().empty());
}

// A frame of the current timeline between two agreeing ones breaks the run.
TEST(Sequencer, ResyncConfirmationNeedsFramesInARow) {
  Fixture f(Fixture::config(4, 64, 1000));
  f.feed_all(range(0, 9));
  EXPECT_EQ(f.feed_all({5000, 5001, 10, 5002, 5003}),
            (std::vector<Decision>{Decision::outlier, Decision::outlier, Decision::in_order,
                                   Decision::outlier, Decision::outlier}));
  EXPECT_EQ(f.feed(5004).decision, Decision::resync);
  EXPECT_EQ(f.seq.stats().outliers, 4u);
  SequencerConfig at_once = Fixture::config(4, 64, 1000);
  at_once.resync_confirm = 1;  // the old behaviour, still available
  Fixture g(at_once);
  g.feed_all(range(0, 9));
  EXPECT_EQ(g.feed(5000).decision, Decision::resync);
}

TEST(Sequencer, JumpAtTheLimitIsAGapNotAResync) {
  Fixture f(Fixture::config(4, 64, 1000));
  f.feed(0);
  EXPECT_EQ(f.feed(1000).decision, Decision::gap);
  EXPECT_EQ(f.seq.stats().lost, 999u);
  EXPECT_EQ(f.seq.stats().resync, 0u);
}

TEST(Sequencer, BackwardJumpBeyondLimitResyncs) {
  Fixture f(Fixture::config(4, 64, 1000));
  f.feed_all(range(10000, 10005));
  EXPECT_EQ(f.feed(8).decision, Decision::outlier);
  EXPECT_EQ(f.feed(9).decision, Decision::outlier);
  const Verdict v = f.feed(10);
  EXPECT_EQ(v.decision, Decision::resync);
  EXPECT_EQ(v.reason, ResyncReason::jump_backward);
  EXPECT_EQ(f.feed(11).decision, Decision::in_order);
  f.seq.flush();
  EXPECT_EQ(f.sink.indices(),
            (std::vector<uint64_t>{10000, 10001, 10002, 10003, 10004, 10005, 10, 11}));
  EXPECT_EQ(f.seq.stats().resync, 1u);
}

TEST(Sequencer, ParameterChangesResyncWithTheirReason) {
  struct Case {
    ResyncReason reason;
    void (*change)(Header&);
  };
  const Case cases[] = {
      {ResyncReason::period,
       [](Header& h) {
         h.period = 2;
         h.total_samples *= 2;
       }},
      {ResyncReason::frame_size,
       [](Header& h) {
         h.data_words = 2048;
         h.total_samples *= 2;
       }},
      {ResyncReason::frames_per_period, [](Header& h) { h.total_samples = 8192 * 2000; }},
      {ResyncReason::epoch, [](Header& h) { h.epoch = 49; }},
      {ResyncReason::nchan,
       [](Header& h) {
         h.nchan = 2;
         h.total_samples /= 2;
       }},
      {ResyncReason::nbits,
       [](Header& h) {
         h.nbits = 4;
         h.total_samples *= 2;
       }},
  };
  for (const Case& c : cases) {
    Fixture f(Fixture::config(4));
    f.feed_all(range(0, 9));
    Header changed = base_header();
    c.change(changed);
    const Verdict first = f.feed(10, changed);
    EXPECT_EQ(first.decision, Decision::outlier) << to_string(c.reason);
    EXPECT_EQ(first.reason, c.reason) << to_string(first.reason);
    EXPECT_EQ(f.feed(11, changed).decision, Decision::outlier) << to_string(c.reason);
    const Verdict v = f.feed(12, changed);
    EXPECT_EQ(v.decision, Decision::resync) << to_string(c.reason);
    EXPECT_EQ(v.reason, c.reason) << to_string(v.reason);
    EXPECT_EQ(f.feed(13, changed).decision, Decision::in_order) << to_string(c.reason);
    const SequencerStats s = f.seq.stats();
    EXPECT_EQ(s.resync, 1u);
    EXPECT_EQ(s.lost, 0u);
    EXPECT_EQ(s.delivered, 10u);  // the first segment, flushed at the resync
  }
}

TEST(Sequencer, InvalidBitFramesAreKeptAndCountedSeparately) {
  Fixture f(Fixture::config(4));
  Header bad = base_header();
  bad.invalid = true;
  f.feed(0);
  EXPECT_EQ(f.feed(1, bad).decision, Decision::in_order);
  EXPECT_EQ(f.feed(2, bad).decision, Decision::in_order);
  f.feed(3);
  f.seq.flush();
  EXPECT_EQ(f.sink.indices(), range(0, 3));
  const SequencerStats s = f.seq.stats();
  EXPECT_EQ(s.invalid, 2u);
  EXPECT_EQ(s.received, 4u);
  EXPECT_EQ(s.delivered, 4u);
}

TEST(Sequencer, GapQueueOverflowIsCounted) {
  SequencerConfig c = Fixture::config(2);
  c.gap_capacity = 2;
  Fixture f(c);
  f.feed_all({0, 2, 4, 6, 8, 9});
  f.seq.flush();
  const SequencerStats s = f.seq.stats();
  EXPECT_EQ(s.gap_events, 4u);
  EXPECT_EQ(s.gap_events_dropped, 2u);
  const auto gaps = f.gaps();
  ASSERT_EQ(gaps.size(), 2u);
  EXPECT_EQ(gaps[0].first_index, 1u);
  EXPECT_EQ(gaps[1].first_index, 3u);
}

TEST(Sequencer, LongGapBeyondHistoryIsOneEvent) {
  Fixture f(Fixture::config(8, 64, 1'000'000));
  f.feed_all({0, 1, 500'000, 500'001});
  f.seq.flush();
  const auto gaps = f.gaps();
  ASSERT_EQ(gaps.size(), 1u);
  EXPECT_EQ(gaps[0].first_index, 2u);
  EXPECT_EQ(gaps[0].count, 499'998u);
  EXPECT_EQ(f.seq.stats().lost, 499'998u);
  EXPECT_EQ(f.feed(1).decision, Decision::late_dropped);  // history was cleared past it
}

TEST(Sequencer, RejectsBadConfig) {
  Recorder r;
  auto message = [&](SequencerConfig c) -> std::string {
    try {
      Sequencer s(c, r);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(message(Fixture::config(0)).find("reorder_window"), std::string::npos);
  EXPECT_NE(message(Fixture::config(8, 100)).find("history"), std::string::npos);
  EXPECT_NE(message(Fixture::config(128, 64)).find("history"), std::string::npos);
  EXPECT_NE(message(Fixture::config(8, 64, 0)).find("resync_frames"), std::string::npos);
}

// ---- randomised comparison with a brute-force model ----

// The rules of doc/codif.md stated over plain sets: a frame below the highest is placed when it is
// less than W below the highest seen so far and not placed before; a frame already placed is a
// duplicate as long as it is within the history; anything else below is dropped.
struct Model {
  int64_t window, history;
  bool started = false;
  int64_t first = 0, high = 0;
  std::set<int64_t> placed;
  std::map<int64_t, uint32_t> tag;

  Decision on(int64_t i, uint32_t t) {
    if (!started) {
      started = true;
      first = high = i;
      return place(i, t, Decision::first);
    }
    if (i > high) {
      const Decision d = i == high + 1 ? Decision::in_order : Decision::gap;
      high = i;
      return place(i, t, d);
    }
    if (placed.count(i) != 0 && high - i < history) return Decision::duplicate;
    if (i > high - window && i >= first) return place(i, t, Decision::late_placed);
    return Decision::late_dropped;
  }
  Decision place(int64_t i, uint32_t t, Decision d) {
    placed.insert(i);
    tag[i] = t;
    return d;
  }
  uint64_t never_placed() const { return static_cast<uint64_t>(high - first + 1) - placed.size(); }
  std::vector<std::pair<int64_t, int64_t>> runs_missing() const {
    std::vector<std::pair<int64_t, int64_t>> runs;
    for (int64_t i = first; i <= high; ++i) {
      if (placed.count(i) != 0) continue;
      if (!runs.empty() && runs.back().first + runs.back().second == i)
        ++runs.back().second;
      else
        runs.push_back({i, 1});
    }
    return runs;
  }
};

// A stream with drops, neighbour swaps (some deeper than the window), duplicates (recent and
// old) and frames delayed far past the window.
std::vector<int64_t> random_arrivals(std::mt19937_64& rng, int64_t start, int count, int window) {
  std::vector<int64_t> v;
  std::uniform_real_distribution<double> u(0, 1);
  for (int64_t i = start; i < start + count; ++i) {
    if (u(rng) < 0.05) continue;  // lost on the wire
    if (u(rng) < 0.02 && i > start + 10) {
      v.push_back(i - 1 - static_cast<int64_t>(rng() % 150));  // duplicate, maybe old
    }
    v.push_back(i);
    if (u(rng) < 0.01) v.push_back(i);  // immediate duplicate
  }
  for (std::size_t k = 0; k + 1 < v.size(); ++k) {
    if (u(rng) < 0.08) {  // late by up to twice the window
      const std::size_t d = 1 + rng() % static_cast<std::size_t>(2 * window);
      std::swap(v[k], v[std::min(v.size() - 1, k + d)]);
    }
  }
  for (int n = 0; n < 5; ++n) {  // a few frames delayed far beyond the window
    const std::size_t from = rng() % v.size();
    const std::size_t to = std::min(v.size() - 1, from + 100 + rng() % 100);
    const int64_t x = v[from];
    v.erase(v.begin() + static_cast<std::ptrdiff_t>(from));
    v.insert(v.begin() + static_cast<std::ptrdiff_t>(to), x);
  }
  return v;
}

// stats().bytes is not counted per frame: it is received x the segment's frame size plus
// what earlier segments and frames of another size added. Frames here come in three sizes:
// the segment's, one with a 32-byte header and the same data_words (as a VDIF legacy header
// may; same signature, so no resync), and a setup with half the data (a resync once three in a
// row confirm it, outliers before that). After every frame, received and bytes must be the
// test's own sums over the frames that were not outliers, on the general path, the fast path,
// and the fast path with SignatureNotes kept per header as the verbs lane's memo does.
TEST(Sequencer, BytesAreTheSumOfEveryReceivedFrameAcrossSizesAndSegments) {
  Header half = base_header();
  half.data_words = kDataWords / 2;
  half.total_samples /= 2;
  const Header bases[2] = {base_header(), half};
  for (int mode = 0; mode < 3; ++mode) {
    Fixture f(Fixture::config(8, 64, 1000));
    SignatureNote notes[2][2];  // [setup][short header]
    std::mt19937_64 rng(40);
    uint64_t next = 1000, received = 0, bytes = 0;
    int which = 0;
    for (int k = 0; k < 6000; ++k) {
      const uint64_t r = rng() % 100;
      if (r < 2) which ^= 1;
      const uint64_t index = r < 85   ? next++
                             : r < 92 ? (next += rng() % 4) - 1
                                      : next - 1 - rng() % 10;
      const int use = r >= 2 && r < 4 ? which ^ 1 : which;
      const Header h = at(index, bases[use]);
      Timing t = timing_of(h);
      const bool odd = r % 7 == 3;  // now and then a frame with another header size
      if (odd) t.header_bytes = 32;
      const auto tag = static_cast<uint32_t>(k);
      const Verdict v =
          mode == 0   ? f.seq.on_frame_general(h, t, tag)
          : mode == 1 ? f.seq.on_frame_at(h, t, h.frame, h.seconds, tag, f.sink)
                      : f.seq.on_frame_at(h, t, h.frame, h.seconds, tag, f.sink, &notes[use][odd]);
      if (v.decision != Decision::outlier) {
        ++received;
        bytes += h.payload_bytes() + t.header_bytes;
      }
      const SequencerStats s = f.seq.stats();
      ASSERT_EQ(s.received, received) << "mode " << mode << " frame " << k;
      ASSERT_EQ(s.bytes, bytes) << "mode " << mode << " frame " << k;
    }
    const SequencerStats s = f.seq.stats();
    EXPECT_GT(s.resync, 20u) << "mode " << mode;
    EXPECT_GT(s.outliers, 40u) << "mode " << mode;
    EXPECT_GT(s.delivered, 4000u) << "mode " << mode;
  }
}

// stats() from another thread (the metrics scrape) while frames of changing sizes arrive: bytes
// and received never go back, bytes stays between received x the smallest and the largest frame
// size, and last_index always belongs with last_time_ns (one stamp gives both).
TEST(Sequencer, StatsReadOnAnotherThreadAreConsistentAndNeverGoBack) {
  Header half = base_header();
  half.data_words = kDataWords / 2;
  half.total_samples /= 2;
  Fixture f(Fixture::config(8, 64, 1000));
  std::atomic<bool> done{false};
  std::jthread feeder([&] {  // joined however the test ends
    uint64_t next = 1000;
    for (int k = 0; k < 200'000; ++k) {
      const bool small = (k / 1000) % 2 == 1;  // a resync to the other size every 1000 frames
      const Header h = at(next++, small ? half : base_header());
      Timing t = timing_of(h);
      if (k % 5 == 0) t.header_bytes = 32;
      f.seq.on_frame(h, t, static_cast<uint32_t>(k));
    }
    done = true;
  });
  uint64_t reads = 0, last_bytes = 0, last_received = 0;
  const uint64_t smallest = kDataWords * 4 + 32, largest = kDataWords * 8 + 64;
  while (!done.load() || reads == 0) {
    const SequencerStats s = f.seq.stats();
    ++reads;
    ASSERT_GE(s.bytes, last_bytes) << "read " << reads;
    ASSERT_GE(s.received, last_received) << "read " << reads;
    ASSERT_GE(s.bytes, s.received * smallest) << "read " << reads;
    ASSERT_LE(s.bytes, s.received * largest) << "read " << reads;
    // Before the first segment's note (its first frame is counted just before) both are 0.
    if (s.last_time_ns != 0) {
      ASSERT_EQ(s.last_time_ns, kEpoch48Ns + static_cast<int64_t>(s.last_index) * kFrameNs)
          << "read " << reads;
    } else {
      ASSERT_EQ(s.last_index, 0u) << "read " << reads;
    }
    last_bytes = s.bytes;
    last_received = s.received;
  }
  feeder.join();
  EXPECT_GT(reads, 10u);
  EXPECT_GT(f.seq.stats().resync, 100u);
}

TEST(Sequencer, MatchesBruteForceModelOnRandomisedStreams) {
  std::array<uint64_t, kDecisionCount> seen_decisions{};
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    std::mt19937_64 rng(seed);
    const uint32_t window = 1u << (rng() % 6);  // 1 .. 32
    const uint32_t history = 64u << (rng() % 2);
    SequencerConfig config = Fixture::config(window, history, 1'000'000);
    config.gap_capacity = 4096;
    Fixture f(config);
    Model m{window, history, false, 0, 0, {}, {}};
    const int64_t start = 1000 + static_cast<int64_t>(rng() % 100'000);
    const auto arrivals = random_arrivals(rng, start, 3000, static_cast<int>(window));
    uint32_t tag = 0;
    int mismatches = 0;
    for (int64_t i : arrivals) {
      const Header h = at(static_cast<uint64_t>(i));
      const Decision got = f.seq.on_frame(h, timing_of(h), ++tag).decision;
      const Decision want = m.on(i, tag);
      ++seen_decisions[static_cast<std::size_t>(want)];
      if (got != want && mismatches++ < 5)
        ADD_FAILURE() << "seed " << seed << " index " << i << ": " << to_string(got) << " != model "
                      << to_string(want);
      // lost is timely: every skipped, not yet placed index counts at once.
      if (f.seq.stats().lost != m.never_placed() && mismatches++ < 5)
        ADD_FAILURE() << "seed " << seed << " lost drifted at index " << i;
    }
    f.seq.flush();
    ASSERT_EQ(mismatches, 0) << "seed " << seed;

    // Delivered: every placed frame once, sorted by time, each with its own slot tag.
    std::vector<uint64_t> want_order(m.placed.begin(), m.placed.end());
    ASSERT_EQ(f.sink.indices(), want_order) << "seed " << seed;
    for (const Delivery& d : f.sink.got)
      ASSERT_EQ(d.tag, m.tag.at(static_cast<int64_t>(d.index))) << "seed " << seed;

    const SequencerStats s = f.seq.stats();
    EXPECT_EQ(s.lost, m.never_placed()) << "seed " << seed;
    EXPECT_EQ(s.delivered + s.lost, static_cast<uint64_t>(m.high - m.first + 1));
    EXPECT_EQ(s.received, arrivals.size());
    EXPECT_EQ(s.received, s.delivered + s.duplicate + s.late_dropped) << "seed " << seed;
    EXPECT_EQ(s.bytes, arrivals.size() * (kDataWords * 8 + 64)) << "seed " << seed;
    EXPECT_EQ(s.first_index, static_cast<uint64_t>(m.first));
    EXPECT_EQ(s.last_index, static_cast<uint64_t>(m.high));

    EXPECT_EQ(s.gap_events_dropped, 0u);
    const auto runs = m.runs_missing();
    const auto gaps = f.gaps();
    ASSERT_EQ(gaps.size(), runs.size()) << "seed " << seed;
    uint64_t gap_total = 0;
    for (std::size_t k = 0; k < runs.size(); ++k) {
      EXPECT_EQ(gaps[k].first_index, static_cast<uint64_t>(runs[k].first)) << "seed " << seed;
      EXPECT_EQ(gaps[k].count, static_cast<uint64_t>(runs[k].second)) << "seed " << seed;
      gap_total += gaps[k].count;
    }
    EXPECT_EQ(gap_total, s.lost) << "seed " << seed;
  }
  // The streams really exercise every rule but resync (tested above).
  for (Decision d : {Decision::in_order, Decision::gap, Decision::late_placed, Decision::duplicate,
                     Decision::late_dropped})
    EXPECT_GT(seen_decisions[static_cast<std::size_t>(d)], 100u) << to_string(d);
}

// ---- sequencer + ring + writer thread, the way a pcap source drives them ----

// One frame of a script for the fast-path comparison: an index, optionally of another
// segment (a parameter change), or a flush.
struct Step {
  int64_t index;
  bool other_segment = false;
  bool flush = false;
};

// Everything observable about a run: decisions, deliveries, gap events, stats.
struct Observed {
  std::vector<Verdict> verdicts;
  std::vector<Delivery> deliveries;
  std::vector<GapEvent> gaps;
  std::vector<SequencerStats> stats;  // after every step
};

Observed run_script(const std::vector<Step>& steps, uint32_t window, bool general) {
  Fixture f(Fixture::config(window, 64, 1000));
  Header other = base_header();
  other.nchan = 2;
  other.total_samples /= 2;
  Observed o;
  uint32_t tag = 0;
  for (const Step& s : steps) {
    if (s.flush) {
      f.seq.flush();
    } else {
      const Header h = at(static_cast<uint64_t>(s.index), s.other_segment ? other : base_header());
      const Timing t = timing_of(h);
      o.verdicts.push_back(general ? f.seq.on_frame_general(h, t, ++tag)
                                   : f.seq.on_frame(h, t, ++tag));
    }
    o.stats.push_back(f.seq.stats());
  }
  f.seq.flush();
  o.stats.push_back(f.seq.stats());
  o.deliveries = f.sink.got;
  o.gaps = f.gaps();
  return o;
}

void expect_same(const Observed& fast, const Observed& general, const std::string& what) {
  ASSERT_EQ(fast.verdicts.size(), general.verdicts.size()) << what;
  for (std::size_t k = 0; k < fast.verdicts.size(); ++k) {
    EXPECT_EQ(fast.verdicts[k].decision, general.verdicts[k].decision) << what << " frame " << k;
    EXPECT_EQ(fast.verdicts[k].reason, general.verdicts[k].reason) << what << " frame " << k;
    EXPECT_EQ(fast.verdicts[k].index, general.verdicts[k].index) << what << " frame " << k;
  }
  ASSERT_EQ(fast.deliveries.size(), general.deliveries.size()) << what;
  for (std::size_t k = 0; k < fast.deliveries.size(); ++k) {
    EXPECT_EQ(fast.deliveries[k].index, general.deliveries[k].index) << what;
    EXPECT_EQ(fast.deliveries[k].tag, general.deliveries[k].tag) << what;
    EXPECT_EQ(fast.deliveries[k].segment_start, general.deliveries[k].segment_start) << what;
  }
  ASSERT_EQ(fast.gaps.size(), general.gaps.size()) << what;
  for (std::size_t k = 0; k < fast.gaps.size(); ++k) {
    EXPECT_EQ(fast.gaps[k].first_index, general.gaps[k].first_index) << what;
    EXPECT_EQ(fast.gaps[k].count, general.gaps[k].count) << what;
    EXPECT_EQ(fast.gaps[k].first_time_ns, general.gaps[k].first_time_ns) << what;
  }
  ASSERT_EQ(fast.stats.size(), general.stats.size()) << what;
  for (std::size_t k = 0; k < fast.stats.size(); ++k) {
    const SequencerStats& a = fast.stats[k];
    const SequencerStats& b = general.stats[k];
    const std::array<uint64_t, 16> x{a.received,
                                     a.bytes,
                                     a.delivered,
                                     a.lost,
                                     a.duplicate,
                                     a.late_placed,
                                     a.late_dropped,
                                     a.invalid,
                                     a.resync,
                                     a.gap_events,
                                     a.first_index,
                                     a.last_index,
                                     static_cast<uint64_t>(a.first_time_ns),
                                     static_cast<uint64_t>(a.last_time_ns),
                                     a.gap_events_dropped,
                                     a.outliers};
    const std::array<uint64_t, 16> y{b.received,
                                     b.bytes,
                                     b.delivered,
                                     b.lost,
                                     b.duplicate,
                                     b.late_placed,
                                     b.late_dropped,
                                     b.invalid,
                                     b.resync,
                                     b.gap_events,
                                     b.first_index,
                                     b.last_index,
                                     static_cast<uint64_t>(b.first_time_ns),
                                     static_cast<uint64_t>(b.last_time_ns),
                                     b.gap_events_dropped,
                                     b.outliers};
    EXPECT_EQ(x, y) << what << " stats after step " << k;
  }
}

// on_frame's in-order fast path against the general rules, on scripts that go from in order
// (window filling, then full) to a gap, late frames, duplicates, a flush and a resync, and back.
TEST(Sequencer, InOrderFastPathAgreesWithTheGeneralRules) {
  std::vector<Step> steps;
  auto run = [&](int64_t first, int64_t last) {
    for (int64_t i = first; i <= last; ++i)
      steps.push_back({i});
  };
  run(100, 140);           // fills the window, then steady
  run(143, 150);           // a gap of 2
  steps.push_back({142});  // late, placed: splits the gap
  steps.push_back({142});  // duplicate, pending
  steps.push_back({120});  // duplicate, delivered
  run(151, 160);           // in order while the gap is still open
  steps.push_back({141});  // late
  run(161, 170);
  steps.push_back({Step{0, false, true}});  // flush: window empty
  run(171, 180);                            // in order after a flush
  steps.push_back({165});                   // behind the window: duplicate
  run(181, 185);
  steps.push_back({186, true});  // resync: nchan changes
  for (int64_t i = 187; i <= 200; ++i)
    steps.push_back({i, true});  // in order in the new segment
  steps.push_back({195, true});  // a duplicate there
  steps.push_back({5000});       // nchan back: resync
  run(5001, 5020);
  steps.push_back({50'000});  // a jump beyond resync_frames: resync
  run(50'001, 50'020);
  steps.push_back({9'000'000});  // a lone outlier: the fast path resumes after it
  run(50'021, 50'040);
  for (uint32_t window : {1u, 2u, 4u, 8u, 64u}) {
    const std::string what = "window " + std::to_string(window);
    const Observed fast = run_script(steps, window, false);
    expect_same(fast, run_script(steps, window, true), what);
    // The script really is mostly in order, so the fast path is taken.
    EXPECT_GT(std::count_if(fast.verdicts.begin(), fast.verdicts.end(),
                            [](const Verdict& v) { return v.decision == Decision::in_order; }),
              60)
        << what;
    EXPECT_EQ(fast.stats.back().resync, 3u) << what;
    EXPECT_EQ(fast.stats.back().outliers, 7u) << what;  // 2 before each resync, and the lone one
    EXPECT_GE(fast.stats.back().duplicate, 3u) << what;
  }
  // Randomised streams too, each frame through both.
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    std::vector<Step> random;
    for (int64_t i : random_arrivals(rng, 10'000, 2000, 8))
      random.push_back({i});
    for (uint32_t window : {1u, 8u, 32u})
      expect_same(run_script(random, window, false), run_script(random, window, true),
                  "seed " + std::to_string(seed) + " window " + std::to_string(window));
  }
}

uint64_t payload_word(uint64_t index, std::size_t k) {
  return index * 0x9E3779B97F4A7C15u + k;
}

// Frames of 128 data bytes; the whole CODIF frame sits in a 256-byte header slot here.
Header small_frame(uint64_t index) {
  Header h = base_header();
  h.data_words = 16;
  h.total_samples = 128 * kFramesPerPeriod;
  return at(index, h);
}

TEST(SequencerWithRing, WriterThreadSeesTimeOrderedFramesAndExactFills) {
  constexpr uint32_t kWindow = 16;
  RingConfig rc;
  rc.slots = 64;
  rc.header_slot_bytes = 256;
  rc.payload_slot_bytes = 64;
  rc.memory = memory::HostMemoryOptions{memory::Want::no, memory::Want::no};
  StreamRing ring(rc);
  RingPublisher publisher(ring);
  SequencerConfig sc = Fixture::config(kWindow, 64, 1'000'000);
  Sequencer seq(sc, publisher);

  std::mt19937_64 rng(42);
  const auto arrivals = random_arrivals(rng, 5000, 200'000, kWindow);

  std::atomic<bool> producer_done{false};
  uint64_t consumed = 0, fills = 0, late_seen = 0, bad = 0;
  std::thread writer([&] {
    uint64_t next = 0;
    bool started = false;
    std::array<SlotId, 32> batch{};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < deadline) {
      const std::size_t n = ring.pop(batch);
      if (n == 0) {
        if (producer_done.load(std::memory_order_acquire) && consumed == seq.stats().delivered)
          break;
        std::this_thread::yield();
        continue;
      }
      for (std::size_t k = 0; k < n; ++k) {
        const SlotMeta& m = ring.meta(batch[k]);
        const auto frame = std::span<const std::byte>(ring.header(batch[k])).first(m.wire_bytes);
        Header h;
        Timing t;
        if (!capture::codif::decode(frame, capture::codif::SyncSet::defaults(), h) ||
            capture::codif::validate(h, frame.size(), t) != capture::codif::Invalid::ok ||
            capture::codif::absolute_index(h, t) != m.frame_index)
          ++bad;
        for (std::size_t w = 0; w < 16; ++w) {
          uint64_t v;
          std::memcpy(&v, frame.data() + capture::codif::kHeaderBytes + 8 * w, 8);
          if (v != payload_word(m.frame_index, w)) ++bad;
        }
        if ((m.flags & kSlotSegmentStart) != 0) {
          if (started) ++bad;  // no resync in this stream
          started = true;
        } else if (m.frame_index < next) {
          ++bad;  // out of time order or twice
        } else {
          fills += m.frame_index - next;
        }
        if ((m.flags & kSlotLate) != 0) ++late_seen;
        next = m.frame_index + 1;
        ++consumed;
      }
      ring.release(std::span<const SlotId>(batch.data(), n));
    }
  });

  uint64_t late_placed = 0;
  for (int64_t index : arrivals) {
    std::array<SlotId, 1> slot{};
    while (ring.take_free(slot) == 0)
      std::this_thread::yield();
    const SlotId id = slot[0];
    const Header sent = small_frame(static_cast<uint64_t>(index));
    std::span<std::byte> buf = ring.header(id);
    capture::codif::encode(sent, buf.first<capture::codif::kHeaderBytes>());
    for (std::size_t w = 0; w < 16; ++w) {
      const uint64_t v = payload_word(static_cast<uint64_t>(index), w);
      std::memcpy(buf.data() + capture::codif::kHeaderBytes + 8 * w, &v, 8);
    }
    // From here on as a source would: decode what is in the slot.
    Header h;
    Timing t;
    ASSERT_TRUE(capture::codif::decode(buf, capture::codif::SyncSet::defaults(), h));
    ASSERT_EQ(capture::codif::validate(h, sent.frame_bytes(), t), capture::codif::Invalid::ok);
    SlotMeta& m = ring.meta(id);
    m = SlotMeta{};
    m.frame_index = capture::codif::absolute_index(h, t);
    m.wire_bytes = static_cast<uint32_t>(sent.frame_bytes());
    m.header_bytes = m.wire_bytes;
    const Verdict v = seq.on_frame(h, t, id);
    if (v.decision == Decision::late_placed) {
      m.flags |= kSlotLate;
      ++late_placed;
    }
    if (!placed(v.decision)) ring.give_back(id);
  }
  seq.flush();
  producer_done.store(true, std::memory_order_release);
  writer.join();

  const SequencerStats s = seq.stats();
  const RingStats r = ring.stats();
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(consumed, s.delivered);
  EXPECT_EQ(fills, s.lost);  // the fill frames a raw writer writes == the counted loss
  EXPECT_EQ(s.delivered + s.lost, s.last_index - s.first_index + 1);
  EXPECT_EQ(late_seen, late_placed);
  EXPECT_GT(late_placed, 0u);
  EXPECT_EQ(r.published, s.delivered);
  EXPECT_EQ(r.taken - r.returned, r.published);
  EXPECT_EQ(r.returned, s.duplicate + s.late_dropped);
  EXPECT_EQ(r.released, r.published);
}

}  // namespace
}  // namespace rocecap::capture
