// Retention keeps the last `keep` written slots out of the free queue, releases older ones in
// order, and holds pinned slots beyond `keep`; drops while pins hold are dump_pinned.
#include "capture/retention.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace rocecap::capture {
namespace {

RingConfig small_ring(uint32_t slots) {
  RingConfig c;
  c.slots = slots;
  c.payload_slot_bytes = 64;
  c.memory.huge_pages = memory::Want::no;
  c.memory.lock = memory::Want::no;
  return c;
}

// Takes `n` slots as the producer, publishes them, pops them as the consumer and retains them.
std::vector<SlotId> cycle(StreamRing& ring, Retention& ret, uint32_t n, uint64_t& index) {
  std::vector<SlotId> ids;
  for (uint32_t i = 0; i < n; ++i) {
    const auto id = ring.acquire();
    if (!id) break;
    ring.meta(*id).frame_index = index++;
    ring.publish(*id);
  }
  ids.resize(n);
  ids.resize(ring.pop(ids));
  ret.retain(ids);
  return ids;
}

TEST(Retention, KeepsTheNewestFramesAndReleasesOlderOnesInOrder) {
  StreamRing ring(small_ring(16));
  Retention ret(ring, 8);
  uint64_t index = 0;
  cycle(ring, ret, 12, index);
  const auto r = ret.range();
  EXPECT_EQ(r.tail - r.head, 8u);
  EXPECT_EQ(ring.meta(ret.at(r.head)).frame_index, 4u);
  EXPECT_EQ(ring.meta(ret.at(r.tail - 1)).frame_index, 11u);
  EXPECT_EQ(ring.free_slots(), 8u);
  EXPECT_EQ(ring.stats().released, 4u);
}

TEST(Retention, APinHoldsSlotsBeyondKeepAndItsDropsAreDumpPinned) {
  StreamRing ring(small_ring(16));
  Retention ret(ring, 8);
  uint64_t index = 0;
  cycle(ring, ret, 8, index);
  uint64_t pinned = 0;
  const auto pin = ret.pin(0, pinned);
  ASSERT_TRUE(pin);
  EXPECT_EQ(pinned, 0u);
  cycle(ring, ret, 8, index);  // 16 held: nothing free
  EXPECT_EQ(ret.stats().held, 16u);
  EXPECT_EQ(ret.stats().pinned_extra, 8u);
  EXPECT_FALSE(ring.acquire());
  EXPECT_EQ(ring.stats().dump_pinned_drops, 1u);
  EXPECT_EQ(ring.stats().ring_full_drops, 0u);
  ret.move_pin(*pin, 5);  // the dump wrote positions 0..4
  cycle(ring, ret, 0, index);
  EXPECT_EQ(ret.range().head, 5u);
  ret.unpin(*pin);
  cycle(ring, ret, 0, index);
  EXPECT_EQ(ret.stats().held, 8u);
  EXPECT_EQ(ret.stats().pinned_extra, 0u);
  ASSERT_TRUE(ring.acquire());  // free again; a later drop would be ring_full
}

// A hold-mode consumer's pin (doc/consumers.md) holds slots like a dump's, but drops it costs
// are consumer_pinned, and once it holds more than its bound the writer drops the pin at once.
TEST(Retention, AConsumersHoldIsBoundedAndItsDropsAreConsumerPinned) {
  StreamRing ring(small_ring(16));
  Retention ret(ring, 2);
  uint64_t index = 0;
  cycle(ring, ret, 2, index);
  uint64_t pinned = 0;
  const auto pin = ret.hold(ret.range().tail, 14, pinned);
  ASSERT_TRUE(pin);
  EXPECT_EQ(pinned, 2u);
  cycle(ring, ret, 14, index);  // the pin holds positions 2..15: exactly its bound
  EXPECT_FALSE(ret.detached(*pin));
  EXPECT_EQ(ret.stats().held, 14u);
  const auto a = ring.acquire(), b = ring.acquire();
  ASSERT_TRUE(a && b);
  EXPECT_FALSE(ring.acquire());  // full, because the consumer holds 12 beyond keep
  EXPECT_EQ(ring.stats().consumer_pinned_drops, 1u);
  EXPECT_EQ(ring.stats().dump_pinned_drops, 0u);
  EXPECT_EQ(ring.stats().ring_full_drops, 0u);
  ring.give_back(*a);
  ring.give_back(*b);
  // One frame beyond the bound: the writer's pass drops the pin and its slots go back.
  cycle(ring, ret, 1, index);
  EXPECT_TRUE(ret.detached(*pin));
  EXPECT_EQ(ret.pinned_at(*pin), Retention::kNoPin);
  EXPECT_EQ(ret.stats().held, 2u);
  ASSERT_TRUE(ring.acquire());
  // The pin stays taken (detached) until its owner lets it go.
  ret.unpin(*pin);
  EXPECT_FALSE(ret.detached(*pin));
}

TEST(Retention, AnAcknowledgingHoldLetsSlotsGo) {
  StreamRing ring(small_ring(16));
  Retention ret(ring, 2);
  uint64_t index = 0;
  uint64_t pinned = 0;
  const auto pin = ret.hold(0, 8, pinned);
  ASSERT_TRUE(pin);
  for (int pass = 0; pass < 20; ++pass) {
    cycle(ring, ret, 3, index);
    ret.move_pin(*pin, ret.range().tail);  // read and acknowledged everything
  }
  EXPECT_FALSE(ret.detached(*pin));
  EXPECT_EQ(ring.stats().consumer_pinned_drops + ring.stats().ring_full_drops, 0u);
  EXPECT_EQ(index, 60u);
}

// A zero-copy source (capture/packet/) lends slots its kernel blocks. Retention holds slots
// for seconds, far past the lending bound, so a lent slot must come back home (its payload
// copied into its own slab slot) and its block go back to the lender when it is retained:
// otherwise the kernel ring fills with held blocks and capture stops (issue 23, item 1).
TEST(Retention, ARetainedLentSlotGivesItsBlockBackAndKeepsItsBytes) {
  StreamRing ring(small_ring(16));
  ring.enable_loans();
  Retention ret(ring, 8);
  std::vector<std::byte> block(256);
  for (std::size_t i = 0; i < block.size(); ++i)
    block[i] = std::byte(i * 7 + 3);
  BlockLoans loans{0};
  std::vector<SlotId> ids;
  for (uint32_t i = 0; i < 3; ++i) {
    const auto id = ring.acquire();
    ASSERT_TRUE(id);
    ring.meta(*id).frame_index = i;
    ring.meta(*id).payload_bytes = 40;
    ring.lend(*id, block.data() + 64 * i, loans);
    loans.fetch_add(1);
    ring.publish(*id);
  }
  ids.resize(3);
  ids.resize(ring.pop(ids));
  ASSERT_EQ(ids.size(), 3u);
  ret.retain(ids);
  EXPECT_EQ(loans.load(), 0u) << "retained slots still hold the lender's block";
  std::vector<std::byte> lent_bytes(block.begin(), block.end());
  std::fill(block.begin(), block.end(), std::byte{0xee});  // the kernel reuses its block
  for (uint32_t i = 0; i < 3; ++i) {
    const auto p = ring.payload(ret.at(i));
    EXPECT_NE(p.data(), block.data() + 64 * i) << "slot " << i << " still points at the block";
    EXPECT_TRUE(std::equal(p.begin(), p.begin() + 40, lent_bytes.begin() + 64 * i))
        << "slot " << i << " lost its payload";
  }
}

TEST(Retention, RefusesToKeepTheWholeRing) {
  StreamRing ring(small_ring(16));
  EXPECT_THROW(Retention(ring, 16), std::invalid_argument);
  EXPECT_THROW(Retention(ring, 0), std::invalid_argument);
}

}  // namespace
}  // namespace rocecap::capture
