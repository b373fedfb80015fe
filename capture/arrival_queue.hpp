// The arrival queue of one interface: every placed frame, in the order it arrived, for writers
// that record the wire (pcap). The Ingest (capture thread) pushes, the CaptureWriter (writer
// thread) pops; a slot's arrival is queued no later than its publication.
#pragma once

#include <cstdint>

#include "capture/stream_ring.hpp"
#include "common/spsc_queue.hpp"

namespace rocecap::capture {

// A placed frame in arrival order.
struct ArrivalRef {
  uint32_t stream = 0;  // index into the interface's streams (the Ingest's order)
  SlotId slot = 0;
};

using ArrivalQueue = common::SpscQueue<ArrivalRef>;

}  // namespace rocecap::capture
