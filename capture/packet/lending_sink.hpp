// The sink side of zero-copy reception: a FrameSink that may keep a frame's payload where the
// source received it (a kernel ring block) instead of copying it into a ring slot.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

#include "capture/pcap/pcap_source.hpp"
#include "capture/stream_ring.hpp"

namespace rocecap::capture::packet {

// The count of slots still lent from one kernel block (StreamRing::lend, capture/stream_ring.hpp).
using BlockLoans = capture::BlockLoans;

// A FrameSink that can also take a frame's payload on loan (tests and tools; rocecapd's
// PacketRingSource delivers to the attached Ingest directly, PacketSource's contract).
class LendingSink : public pcap::FrameSink {
 public:
  // As on_frame, but the bytes stay valid until `loans` drops to zero: a sink that keeps the
  // payload in a slot instead of copying it calls StreamRing::lend(slot, ..., loans), which
  // releases the loan when the slot is released or given back. Returns whether it lent (one
  // loan taken), false when it copied or rejected the frame.
  virtual bool on_frame_lent(std::span<const std::byte> captured, std::size_t wire_bytes,
                             int64_t timestamp_ns, BlockLoans& loans) noexcept = 0;

 protected:
  ~LendingSink() = default;
};

}  // namespace rocecap::capture::packet
