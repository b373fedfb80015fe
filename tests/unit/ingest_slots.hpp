// The verbs path in unit tests: a frame as the NIC scatters it into a ring slot, handed to
// Ingest::on_slot.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
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

}  // namespace rocecap::test
