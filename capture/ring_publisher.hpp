// The DeliverySink that joins a stream's Sequencer to its StreamRing: every frame the
// sequencer delivers (in time order) is published to the writer, and the first frame of a
// segment is flagged so the writer writes no fill frames across a resynchronisation.
//
// Producer-side use per packet: fill the slot and its SlotMeta (flags cleared, frame_index
// set), call Sequencer::on_frame(header, timing, slot); when !placed(decision) the slot is
// still the producer's, so give_back() it (pcap) or re-post it (verbs).
#pragma once

#include "capture/sequencer.hpp"
#include "capture/stream_ring.hpp"

namespace rocecap::capture {

class RingPublisher final : public DeliverySink {
 public:
  explicit RingPublisher(StreamRing& ring) noexcept : ring_(ring) {}

  void deliver(const Delivery& d) noexcept override {
    if (d.segment_start) ring_.meta(d.tag).flags |= kSlotSegmentStart;
    ring_.publish(d.tag);
  }

 private:
  StreamRing& ring_;
};

}  // namespace rocecap::capture
