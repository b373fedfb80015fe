// The verbs path in unit tests: a frame as the NIC scatters it into a ring slot, handed to
// Ingest::on_slot; and what the equivalence tests of its fast lanes (frame_memo_test,
// vdif_memo_test) compare between it and Ingest::on_frame: publications, arrivals, counters.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "capture/ingest.hpp"

namespace rocecap::test {

// Frame `f` scattered at a 128-byte split (the rings' header_slot_bytes in these tests) into a
// slot of stream `stream`'s ring, then on_slot with time stamp `ts`.
inline void into_slot(capture::Ingest& ingest, uint32_t stream, const std::vector<std::byte>& f,
                      int64_t ts = 0) {
  capture::StreamRing& ring = ingest.streams()[stream]->ring();
  const auto slot = ring.acquire();
  ASSERT_TRUE(slot);
  std::memcpy(ring.header(*slot).data(), f.data(), 128);
  std::memcpy(ring.payload(*slot).data(), f.data() + 128, f.size() - 128);
  ingest.on_slot(stream, *slot, static_cast<uint32_t>(f.size()), ts, 0);
}

// What a stream published, in order, with every slot field a writer reads.
struct Published {
  uint64_t index = 0;
  int64_t timestamp_ns = 0;
  uint32_t wire = 0, header = 0, payload = 0;
  uint16_t udp_offset = 0, flags = 0;
  bool operator==(const Published&) const = default;
};

inline void drain_into(capture::StreamPipeline& sp, std::vector<Published>& out) {
  capture::SlotId id;
  while (sp.ring().pop(id)) {
    const capture::SlotMeta& m = sp.ring().meta(id);
    out.push_back({m.frame_index, m.timestamp_ns, m.wire_bytes, m.header_bytes, m.payload_bytes,
                   m.udp_payload_offset, m.flags});
    sp.ring().release(id);
  }
}

// One side of a comparison: two streams behind one Ingest that records arrivals.
struct SlotSide {
  capture::StreamPipeline a, b;
  capture::Ingest ingest{{&a, &b}, true};
  std::vector<Published> out_a, out_b;
  std::vector<std::pair<uint32_t, uint64_t>> arrivals;

  SlotSide(const capture::StreamSpec& sa, const capture::StreamSpec& sb) : a(sa), b(sb) {}
  void drain() {
    capture::ArrivalRef r;
    if (capture::ArrivalQueue* q = ingest.arrivals()) {
      while (q->pop(r))
        arrivals.emplace_back(r.stream,
                              ingest.streams()[r.stream]->ring().meta(r.slot).frame_index);
    }
    drain_into(a, out_a);
    drain_into(b, out_b);
  }
};

// `frames` frames from `next()` (a pair: stream index, frame) to both sides, the fast one
// through on_slot and the general one through on_frame, with time stamps 0, 10, 20, ...; both
// drained after every frame, then flushed and drained.
template <class Next>
void feed_both(SlotSide& fast, SlotSide& general, int frames, Next next) {
  for (int n = 0; n < frames; ++n) {
    const auto [s, f] = next();
    into_slot(fast.ingest, s, f, n * 10);
    general.ingest.on_frame(f, f.size(), n * 10);
    fast.drain();
    general.drain();
  }
  fast.ingest.flush_all();
  general.ingest.flush_all();
  fast.drain();
  general.drain();
}

// Every sequencer counter and timeline mark of two streams that saw the same traffic.
inline void expect_same_sequencer(const capture::SequencerStats& x,
                                  const capture::SequencerStats& y) {
  EXPECT_EQ(x.received, y.received);
  EXPECT_EQ(x.bytes, y.bytes);
  EXPECT_EQ(x.delivered, y.delivered);
  EXPECT_EQ(x.lost, y.lost);
  EXPECT_EQ(x.duplicate, y.duplicate);
  EXPECT_EQ(x.late_placed, y.late_placed);
  EXPECT_EQ(x.late_dropped, y.late_dropped);
  EXPECT_EQ(x.invalid, y.invalid);
  EXPECT_EQ(x.resync, y.resync);
  EXPECT_EQ(x.outliers, y.outliers);
  EXPECT_EQ(x.gap_events, y.gap_events);
  EXPECT_EQ(x.first_index, y.first_index);
  EXPECT_EQ(x.last_index, y.last_index);
  EXPECT_EQ(x.last_time_ns, y.last_time_ns);
}

// Both sides published, in the same order, and rejected the same frames for the same reasons.
inline void expect_same_output(const SlotSide& fast, const SlotSide& general) {
  EXPECT_TRUE(fast.out_a == general.out_a);
  EXPECT_TRUE(fast.out_b == general.out_b);
  EXPECT_TRUE(fast.arrivals == general.arrivals);
  for (std::size_t r = 0; r < capture::kRejectReasonCount; ++r)
    EXPECT_EQ(fast.ingest.rejected(r), general.ingest.rejected(r)) << capture::reject_name(r);
  expect_same_sequencer(fast.a.sequencer().stats(), general.a.sequencer().stats());
  expect_same_sequencer(fast.b.sequencer().stats(), general.b.sequencer().stats());
}

}  // namespace rocecap::test
