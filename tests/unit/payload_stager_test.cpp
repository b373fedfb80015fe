// PayloadStager on a bare ring with the host-side engines: which 2D copies it queues (runs of
// consecutive slots, split at a wrap, a size change and a batch boundary), that the next batch
// is queued before the current one is waited for (double buffering), that the sink sees an
// item only after its copy completed and gets exactly the slot's bytes, and the counters.
#include "writers/staging/payload_stager.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "staging_test_util.hpp"
#include "writer_test_util.hpp"

namespace rocecap::writers::staging {
namespace {

using capture::SlotId;
using capture::StreamRing;
using Bytes = std::vector<std::byte>;

capture::RingConfig config16() {
  capture::RingConfig c;
  c.slots = 16;
  c.payload_slot_bytes = 200;  // stride 256 with the default 64-byte alignment
  c.memory =
      capture::memory::HostMemoryOptions{capture::memory::Want::no, capture::memory::Want::no};
  return c;
}

// Fills slot `id` with `bytes` pattern bytes (seeded by the slot) and returns them.
Bytes fill(StreamRing& ring, SlotId id, uint32_t bytes) {
  const Bytes b = writers::test::pattern(bytes, 100 + id);
  if (!b.empty()) std::memcpy(ring.payload(id).data(), b.data(), b.size());
  ring.meta(id).payload_bytes = bytes;
  return b;
}

struct Delivered {
  SlotId slot;
  uint32_t tag;
  Bytes bytes;
  bool ok;
};

struct Harness {
  StreamRing ring{config16()};
  std::vector<std::string> log;
  test::DeferredEngine* engine = nullptr;  // owned by the stager
  std::unique_ptr<PayloadStager> stager;
  std::vector<Delivered> out;

  explicit Harness(std::size_t buffer_bytes) {
    auto e = std::make_unique<test::DeferredEngine>();
    engine = e.get();
    engine->log = &log;
    StagingOptions o;
    o.buffer_bytes = buffer_bytes;
    stager = std::make_unique<PayloadStager>(std::move(e), ring.payload_stride(), o);
  }
  void stage(const std::vector<StageItem>& items) {
    stager->stage(items, [this](const StageItem& it, std::span<const std::byte> p, bool ok) {
      log.push_back("sink " + std::to_string(it.slot));
      out.push_back({it.slot, it.tag, Bytes(p.begin(), p.end()), ok});
    });
  }
};

TEST(PayloadStager, OneCopyPerRunOfConsecutiveSlotsSplitAtWrapAndSizeChange) {
  Harness h(1 << 20);
  std::vector<Bytes> want;
  std::vector<StageItem> items;
  // 3..6 consecutive, 15 then 0,1 (the ring wraps: two runs), 9 alone, 10 with another size.
  for (SlotId id : {3u, 4u, 5u, 6u, 15u, 0u, 1u, 9u, 10u}) {
    want.push_back(fill(h.ring, id, id == 10 ? 120 : 200));
    items.push_back({&h.ring, id, id * 10});
  }
  h.stage(items);

  std::vector<std::string> copies;
  for (const auto& l : h.log)
    if (l.rfind("copy", 0) == 0) copies.push_back(l);
  EXPECT_EQ(copies, (std::vector<std::string>{"copy0 rows4", "copy0 rows1", "copy0 rows2",
                                              "copy0 rows1", "copy0 rows1"}));
  ASSERT_EQ(h.out.size(), items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    EXPECT_EQ(h.out[i].slot, items[i].slot);
    EXPECT_EQ(h.out[i].tag, items[i].tag);
    EXPECT_TRUE(h.out[i].ok);
    EXPECT_EQ(h.out[i].bytes, want[i]) << "slot " << items[i].slot;
  }
  const StagingStats& s = h.stager->stats();
  EXPECT_EQ(s.bytes_copied, 8u * 200 + 120);
  EXPECT_EQ(s.frames_staged, 9u);
  EXPECT_EQ(s.copies, 5u);
  EXPECT_EQ(s.batches, 1u);
  EXPECT_EQ(s.frames_failed, 0u);
}

// Slots lent by a zero-copy source (capture/packet/) keep their payload outside the slab: a
// lent slot never joins a run, so each is copied from where payload() says it is.
TEST(PayloadStager, LentSlotsAreCopiedFromTheLenderNotTheSlab) {
  Harness h(1 << 20);
  h.ring.enable_loans();
  capture::BlockLoans loans{0};
  std::vector<Bytes> want;
  std::vector<StageItem> items;
  std::vector<Bytes> lender(2);
  for (SlotId id : {3u, 4u, 5u, 6u}) {
    if (id == 4 || id == 5) {  // lent: the slab keeps other bytes
      fill(h.ring, id, 200);
      Bytes& b = lender[id - 4];
      b = writers::test::pattern(200, 900 + id);
      h.ring.lend(id, b.data(), loans);
      ++loans;
      want.push_back(b);
    } else {
      want.push_back(fill(h.ring, id, 200));
    }
    items.push_back({&h.ring, id, id});
  }
  h.stage(items);
  ASSERT_EQ(h.out.size(), items.size());
  for (std::size_t i = 0; i < items.size(); ++i)
    EXPECT_EQ(h.out[i].bytes, want[i]) << "slot " << items[i].slot;
  EXPECT_EQ(h.stager->stats().copies, 4u);  // 3 | 4 | 5 | 6: no run across a lent slot
}

TEST(PayloadStager, QueuesTheNextBatchBeforeWaitingAndDeliversOnlyAfterCompletion) {
  Harness h(450);  // two 200-byte payloads per batch
  std::vector<StageItem> items;
  std::vector<Bytes> want;
  for (SlotId id = 7; id < 12; ++id) {
    want.push_back(fill(h.ring, id, 200));
    items.push_back({&h.ring, id, 0});
  }
  h.stage(items);
  const std::vector<std::string> expected = {
      "copy0 rows2", "fence0", "copy1 rows2", "fence1", "wait0",   "sink 7", "sink 8",
      "copy0 rows1", "fence0", "wait1",       "sink 9", "sink 10", "wait0",  "sink 11"};
  EXPECT_EQ(h.log, expected);
  ASSERT_EQ(h.out.size(), 5u);
  // The deferred engine copies at wait(): a sink before completion would see zero bytes.
  for (std::size_t i = 0; i < 5; ++i)
    EXPECT_EQ(h.out[i].bytes, want[i]) << i;
  EXPECT_EQ(h.stager->stats().batches, 3u);
  EXPECT_EQ(h.stager->stats().bytes_copied, 1000u);
}

TEST(PayloadStager, BufferSmallerThanASlotIsRaisedToOneSlot) {
  Harness h(10);
  EXPECT_EQ(h.stager->buffer_bytes(), h.ring.payload_stride());
  const Bytes want = fill(h.ring, 2, 200);
  const Bytes want3 = fill(h.ring, 3, 200);
  h.stage({{&h.ring, 2, 0}, {&h.ring, 3, 0}});
  ASSERT_EQ(h.out.size(), 2u);
  EXPECT_EQ(h.out[0].bytes, want);
  EXPECT_EQ(h.out[1].bytes, want3);
  EXPECT_EQ(h.stager->stats().batches, 2u);
}

TEST(PayloadStager, EmptyPayloadsAreDeliveredWithoutACopy) {
  Harness h(1 << 20);
  fill(h.ring, 4, 0);
  h.stage({{&h.ring, 4, 0}});
  ASSERT_EQ(h.out.size(), 1u);
  EXPECT_TRUE(h.out[0].ok);
  EXPECT_TRUE(h.out[0].bytes.empty());
  EXPECT_EQ(h.stager->stats().copies, 0u);
  EXPECT_EQ(h.stager->stats().frames_staged, 1u);
}

TEST(PayloadStager, FailedCopiesReachTheSinkAsNotOkAndAreCounted) {
  Harness h(450);
  h.engine->fail_copies = true;
  std::vector<StageItem> items;
  for (SlotId id = 0; id < 3; ++id) {
    fill(h.ring, id, 200);
    items.push_back({&h.ring, id, 0});
  }
  h.stage(items);
  ASSERT_EQ(h.out.size(), 3u);
  for (const auto& d : h.out) {
    EXPECT_FALSE(d.ok);
    EXPECT_TRUE(d.bytes.empty());
  }
  EXPECT_EQ(h.stager->stats().frames_failed, 3u);
  EXPECT_EQ(h.stager->stats().copy_errors, 2u);  // one run per batch
  EXPECT_EQ(h.stager->stats().bytes_copied, 0u);
  EXPECT_EQ(h.stager->stats().frames_staged, 0u);
}

TEST(PayloadStager, LagCoversTheWaitForTheCopy) {
  Harness h(1 << 20);
  h.engine->on_complete = [](unsigned, std::size_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  };
  fill(h.ring, 0, 200);
  fill(h.ring, 1, 200);
  h.stage({{&h.ring, 0, 0}, {&h.ring, 1, 0}});
  const StagingStats& s = h.stager->stats();
  EXPECT_GE(s.lag_ns_max, 5'000'000u);
  EXPECT_GE(s.lag_ns_total, 2 * s.lag_ns_max);  // both frames waited as long
}

TEST(PayloadStager, RefusesAnEngineWithoutTwoLanes) {
  EXPECT_THROW(PayloadStager(nullptr, 256), std::invalid_argument);
}

}  // namespace
}  // namespace rocecap::writers::staging
