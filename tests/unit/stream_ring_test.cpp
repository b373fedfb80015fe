#include "capture/stream_ring.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace rocecap::capture {
namespace {

RingConfig small_config(uint32_t slots) {
  RingConfig c;
  c.slots = slots;
  c.header_slot_bytes = 128;
  c.payload_slot_bytes = 256;
  c.memory = memory::HostMemoryOptions{memory::Want::no, memory::Want::no};
  return c;
}

bool aligned(const void* p, std::size_t a) {
  return reinterpret_cast<std::uintptr_t>(p) % a == 0;
}

TEST(SpscQueue, RoundsCapacityUpAndKeepsOrderAcrossWrapAround) {
  common::SpscQueue<uint32_t> q(5);
  EXPECT_EQ(q.capacity(), 8u);
  uint32_t next_in = 0, next_out = 0;
  for (int round = 0; round < 10; ++round) {  // 10 x 6 values through 8 entries: wraps
    std::array<uint32_t, 6> in{};
    for (uint32_t& v : in)
      v = next_in++;
    ASSERT_EQ(q.push(in), 6u);
    std::array<uint32_t, 6> out{};
    ASSERT_EQ(q.pop(out), 6u);
    for (uint32_t v : out)
      EXPECT_EQ(v, next_out++);
  }
  EXPECT_EQ(q.size_approx(), 0u);
}

TEST(SpscQueue, FullAndEmptyArePartialNotBlocking) {
  common::SpscQueue<uint64_t> q(4);
  const std::array<uint64_t, 6> in{10, 11, 12, 13, 14, 15};
  EXPECT_EQ(q.push(in), 4u);  // only what fits
  EXPECT_FALSE(q.push(uint64_t{99}));
  EXPECT_EQ(q.size_approx(), 4u);
  uint64_t v = 0;
  ASSERT_TRUE(q.pop(v));
  EXPECT_EQ(v, 10u);
  EXPECT_TRUE(q.push(uint64_t{16}));
  std::array<uint64_t, 8> out{};
  ASSERT_EQ(q.pop(out), 4u);
  EXPECT_EQ(out[0], 11u);
  EXPECT_EQ(out[3], 16u);
  EXPECT_FALSE(q.pop(v));
}

// readable() must see a push made after it last answered false (its copy of the tail is stale
// then), and say false again once everything is popped.
TEST(SpscQueue, ReadableSaysWhetherPopWouldReturnAValue) {
  common::SpscQueue<uint32_t> q(4);
  EXPECT_FALSE(q.readable());
  ASSERT_TRUE(q.push(7u));
  EXPECT_TRUE(q.readable());
  ASSERT_TRUE(q.push(8u));
  uint32_t v = 0;
  ASSERT_TRUE(q.pop(v));
  EXPECT_TRUE(q.readable());  // 8 is still there
  ASSERT_TRUE(q.pop(v));
  EXPECT_EQ(v, 8u);
  EXPECT_FALSE(q.readable());
  for (uint32_t k = 0; k < 9; ++k) {  // across the wrap-around
    ASSERT_TRUE(q.push(k));
    EXPECT_TRUE(q.readable());
    ASSERT_TRUE(q.pop(v));
    EXPECT_EQ(v, k);
    EXPECT_FALSE(q.readable());
  }
}

TEST(StreamRing, SlabStridesAndAlignment) {
  for (uint32_t align : {64u, 4096u}) {
    RingConfig c = small_config(37);
    c.header_slot_bytes = 100;
    c.payload_slot_bytes = 8200;
    c.payload_align = align;
    StreamRing ring(c);
    EXPECT_EQ(ring.header_stride(), 128u);
    EXPECT_EQ(ring.payload_stride(), align == 64 ? 8256u : 12288u);
    EXPECT_GE(ring.header_memory().size(), 37u * 128u);
    EXPECT_GE(ring.payload_memory().size(), 37u * ring.payload_stride());
    EXPECT_EQ(ring.payload_kind(), memory::MemoryKind::host);
    for (SlotId id = 0; id < ring.slots(); ++id) {
      EXPECT_TRUE(aligned(ring.header(id).data(), 64)) << id;
      EXPECT_TRUE(aligned(ring.payload(id).data(), align)) << id;
      EXPECT_EQ(ring.header(id).size(), 128u);
      EXPECT_EQ(ring.payload(id).size(), ring.payload_stride());
    }
    // The last slot ends inside the slabs, and distinct slots do not overlap.
    EXPECT_LE(ring.payload(36).data() + ring.payload_stride(),
              ring.payload_memory().data() + ring.payload_memory().size());
    EXPECT_EQ(ring.payload(1).data() - ring.payload(0).data(),
              static_cast<std::ptrdiff_t>(ring.payload_stride()));
    std::memset(ring.payload(36).data(), 0xAB, ring.payload_stride());
    std::memset(ring.header(36).data(), 0xCD, ring.header_stride());
    EXPECT_EQ(static_cast<uint8_t>(ring.payload(36).back()), 0xAB);
  }
}

TEST(StreamRing, RejectsBadConfigNamingTheField) {
  auto message = [](RingConfig c) -> std::string {
    try {
      StreamRing ring(c);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "no error";
  };
  RingConfig c = small_config(4);
  c.slots = 0;
  EXPECT_NE(message(c).find("slots"), std::string::npos);
  c = small_config(4);
  c.payload_align = 96;
  EXPECT_NE(message(c).find("payload_align"), std::string::npos);
  c = small_config(4);
  c.header_slot_bytes = 32;
  EXPECT_NE(message(c).find("header_slot_bytes"), std::string::npos);
}

// A pluggable payload slab, as a GPU allocator would provide.
class FakeDeviceMemory final : public memory::PayloadMemory {
 public:
  explicit FakeDeviceMemory(std::size_t bytes)
      : mem_(bytes, memory::HostMemoryOptions{memory::Want::no, memory::Want::no}), size_(bytes) {}
  std::byte* data() const noexcept override { return mem_.data(); }
  std::size_t size() const noexcept override { return size_; }
  memory::MemoryKind kind() const noexcept override { return memory::MemoryKind::gpu; }

 private:
  memory::HostMemory mem_;
  std::size_t size_;
};

TEST(StreamRing, UsesProvidedPayloadMemory) {
  RingConfig c = small_config(16);
  auto mem = std::make_unique<FakeDeviceMemory>(StreamRing::payload_bytes_needed(c));
  std::byte* base = mem->data();
  StreamRing ring(c, std::move(mem));
  EXPECT_EQ(ring.payload_kind(), memory::MemoryKind::gpu);
  EXPECT_EQ(ring.payload(0).data(), base);
  EXPECT_EQ(ring.payload(3).data(), base + 3 * 256);

  auto small = std::make_unique<FakeDeviceMemory>(StreamRing::payload_bytes_needed(c) - 1);
  try {
    StreamRing bad(c, std::move(small));
    FAIL() << "too small payload memory accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("needs 4096"), std::string::npos) << e.what();
  }
}

TEST(StreamRing, RingFullCountsDropsAndRecovers) {
  StreamRing ring(small_config(4));
  std::vector<SlotId> got;
  for (int k = 0; k < 4; ++k) {
    auto id = ring.acquire();
    ASSERT_TRUE(id.has_value());
    got.push_back(*id);
  }
  EXPECT_EQ(got, (std::vector<SlotId>{0, 1, 2, 3}));
  EXPECT_FALSE(ring.acquire().has_value());
  EXPECT_FALSE(ring.acquire().has_value());
  RingStats s = ring.stats();
  EXPECT_EQ(s.taken, 4u);
  EXPECT_EQ(s.ring_full_drops, 2u);

  ring.publish(2);
  ring.publish(0);
  SlotId a = 99, b = 99;
  ASSERT_TRUE(ring.pop(a));
  ASSERT_TRUE(ring.pop(b));
  EXPECT_EQ(a, 2u);
  EXPECT_EQ(b, 0u);
  EXPECT_FALSE(ring.pop(a));
  EXPECT_FALSE(ring.acquire().has_value());  // popped but not released: still the writer's
  ring.release(b);
  auto again = ring.acquire();
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(*again, 0u);
  s = ring.stats();
  EXPECT_EQ(s.taken, 5u);
  EXPECT_EQ(s.published, 2u);
  EXPECT_EQ(s.consumed, 2u);
  EXPECT_EQ(s.released, 1u);
  EXPECT_EQ(s.ring_full_drops, 3u);
}

TEST(StreamRing, FreeSlotsFollowTakeGiveBackAndRelease) {
  StreamRing ring(small_config(4));
  EXPECT_EQ(ring.free_slots(), 4u);
  const auto a = ring.acquire();
  const auto b = ring.acquire();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(ring.free_slots(), 2u);
  ring.give_back(*b);  // a rejected frame: its slot is free again at once
  EXPECT_EQ(ring.free_slots(), 3u);
  ring.publish(*a);
  EXPECT_EQ(ring.free_slots(), 3u);  // with the writer until released
  SlotId popped = 99;
  ASSERT_TRUE(ring.pop(popped));
  ring.release(popped);
  EXPECT_EQ(ring.free_slots(), 4u);
  for (int k = 0; k < 4; ++k)
    ASSERT_TRUE(ring.acquire().has_value());
  EXPECT_EQ(ring.free_slots(), 0u);
  EXPECT_FALSE(ring.acquire().has_value());
  EXPECT_EQ(ring.free_slots(), 0u);  // a ring-full drop takes nothing
}

TEST(StreamRing, ReleasedSlotsComeBackInReleaseOrderAndTakeFreeNeverCountsDrops) {
  StreamRing ring(small_config(8));
  std::array<SlotId, 8> posted{};
  ASSERT_EQ(ring.take_free(posted), 8u);
  for (SlotId k = 0; k < 8; ++k)
    EXPECT_EQ(posted[k], k);
  std::array<SlotId, 1> none{};
  EXPECT_EQ(ring.take_free(none), 0u);
  EXPECT_EQ(ring.stats().ring_full_drops, 0u);

  // Published in time order, which is not the order the slots were filled in.
  for (SlotId id : {3u, 1u, 6u, 0u})
    ring.publish(id);
  std::array<SlotId, 8> popped{};
  ASSERT_EQ(ring.pop(popped), 4u);
  EXPECT_EQ((std::vector<SlotId>(popped.begin(), popped.begin() + 4)),
            (std::vector<SlotId>{3, 1, 6, 0}));
  const std::array<SlotId, 3> released{6, 3, 0};
  ring.release(released);
  ring.release(1);
  ring.give_back(5);  // producer-side discard: handed out first
  std::array<SlotId, 8> repost{};
  ASSERT_EQ(ring.take_free(repost), 5u);
  EXPECT_EQ((std::vector<SlotId>(repost.begin(), repost.begin() + 5)),
            (std::vector<SlotId>{5, 6, 3, 0, 1}));
  const RingStats s = ring.stats();
  EXPECT_EQ(s.returned, 1u);
  EXPECT_EQ(s.released, 4u);
}

// The verbs source asks has_free() before take_free() for every stream after every poll: it
// must say true exactly when take_free() would hand out a slot (a slot given back, one
// released by the writer), or slots would stay unposted.
TEST(StreamRing, HasFreeSaysWhetherTakeFreeWouldHandOutASlot) {
  StreamRing ring(small_config(4));
  std::array<SlotId, 4> ids{};
  EXPECT_TRUE(ring.has_free());
  ASSERT_EQ(ring.take_free(ids), 4u);
  EXPECT_FALSE(ring.has_free());
  ring.give_back(ids[2]);  // the stash
  EXPECT_TRUE(ring.has_free());
  ASSERT_EQ(ring.take_free(ids), 1u);
  EXPECT_FALSE(ring.has_free());
  ring.publish(ids[0]);
  EXPECT_FALSE(ring.has_free());  // with the writer
  SlotId popped = 99;
  ASSERT_TRUE(ring.pop(popped));
  ring.release(popped);  // the free queue
  EXPECT_TRUE(ring.has_free());
  std::array<SlotId, 1> one{};
  ASSERT_EQ(ring.take_free(one), 1u);
  EXPECT_EQ(one[0], popped);
  EXPECT_FALSE(ring.has_free());
  EXPECT_EQ(ring.stats().ring_full_drops, 0u);
}

// The verbs source visits only the rings its ReleaseMask names after a poll: every way a slot
// comes back to the producer must mark the ring's stream, or its slots are never posted again.
TEST(StreamRing, ReleaseAndGiveBackMarkTheStreamInTheReleaseMask) {
  StreamRing ring(small_config(4));
  auto mask = std::make_shared<ReleaseMask>(70);
  ring.set_release_mask(mask, 67);  // the second word
  std::vector<uint32_t> seen;
  auto taken = [&] {
    seen.clear();
    EXPECT_TRUE(mask->take([&](uint32_t i) {
      seen.push_back(i);
      return true;
    }));
    return seen;
  };
  std::array<SlotId, 4> ids{};
  ASSERT_EQ(ring.take_free(ids), 4u);
  EXPECT_EQ(taken(), std::vector<uint32_t>{});  // taking marks nothing
  ring.give_back(ids[3]);
  EXPECT_EQ(taken(), std::vector<uint32_t>{67});
  EXPECT_EQ(taken(), std::vector<uint32_t>{});  // take() cleared it
  ring.publish(ids[0]);
  ring.publish(ids[1]);
  EXPECT_EQ(taken(), std::vector<uint32_t>{});  // publishing marks nothing
  std::array<SlotId, 2> popped{};
  ASSERT_EQ(ring.pop(popped), 2u);
  EXPECT_EQ(taken(), std::vector<uint32_t>{});  // nor does popping
  ring.release(std::span<const SlotId>(popped).first(0));
  EXPECT_EQ(taken(), std::vector<uint32_t>{});  // nothing released: no mark
  ring.release(popped);
  EXPECT_EQ(taken(), std::vector<uint32_t>{67});
  // Without a mask (the pcap path, the tests above) release and give_back mark nothing.
  StreamRing plain(small_config(2));
  SlotId one = 0;
  ASSERT_EQ(plain.take_free(std::span<SlotId>(&one, 1)), 1u);
  plain.give_back(one);
  EXPECT_EQ(taken(), std::vector<uint32_t>{});
}

// Word k of a packet's pattern; whole 64-bit words keep the million-packet test quick.
uint64_t pattern(uint64_t seq, std::size_t k) {
  return (seq + 1) * 0x9E3779B97F4A7C15u ^ k;
}

void fill(std::span<std::byte> bytes, uint64_t seq) {
  for (std::size_t k = 0; k < bytes.size() / 8; ++k) {
    const uint64_t w = pattern(seq, k);
    std::memcpy(bytes.data() + 8 * k, &w, 8);
  }
}

bool matches(std::span<const std::byte> bytes, uint64_t seq, uint32_t words) {
  for (std::size_t k = 0; k < words; ++k) {
    uint64_t w;
    std::memcpy(&w, bytes.data() + 8 * k, 8);
    if (w != pattern(seq, k)) return false;
  }
  return true;
}

// Two threads move a million packets through a 64-slot ring; the consumer checks order,
// contents and metadata of every one, so a slot reused too early or lost shows up.
TEST(StreamRing, SpscMillionSlotsOrderedWithIntactContents) {
  constexpr uint64_t kPackets = 1'000'000;
  StreamRing ring(small_config(256));
  std::thread producer([&] {
    for (uint64_t seq = 0; seq < kPackets; ++seq) {
      std::optional<SlotId> id;
      std::array<SlotId, 1> one{};
      while (ring.take_free(one) == 0)
        std::this_thread::yield();
      id = one[0];
      if (seq % 1000 == 7) {  // exercise the give-back path now and then
        ring.give_back(*id);
        while (ring.take_free(one) == 0)
          std::this_thread::yield();
        id = one[0];
      }
      const uint32_t n = 8 * (1 + static_cast<uint32_t>(seq % 32));
      fill(ring.header(*id), seq);
      fill(ring.payload(*id).first(n), seq + 1);
      SlotMeta& m = ring.meta(*id);
      m.frame_index = seq;
      m.payload_bytes = n;
      m.timestamp_ns = static_cast<int64_t>(seq * 3);
      ring.publish(*id);
    }
  });
  uint64_t expected = 0, bad = 0;
  std::array<SlotId, 16> batch{};
  std::vector<uint8_t> held(256, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (expected < kPackets && std::chrono::steady_clock::now() < deadline) {
    const std::size_t n = ring.pop(batch);
    if (n == 0) std::this_thread::yield();  // two threads may share one core here
    for (std::size_t k = 0; k < n; ++k) {
      const SlotId id = batch[k];
      const SlotMeta& m = ring.meta(id);
      if (held[id]++ != 0) ++bad;  // the same slot handed out twice at once
      if (m.frame_index != expected || m.timestamp_ns != static_cast<int64_t>(expected * 3) ||
          m.payload_bytes != 8 * (1 + expected % 32) || !matches(ring.header(id), expected, 16) ||
          !matches(ring.payload(id), expected + 1, m.payload_bytes / 8))
        ++bad;
      ++expected;
    }
    for (std::size_t k = 0; k < n; ++k)
      held[batch[k]] = 0;
    ring.release(std::span<const SlotId>(batch.data(), n));
  }
  producer.join();
  EXPECT_EQ(expected, kPackets);
  EXPECT_EQ(bad, 0u);
  const RingStats s = ring.stats();
  EXPECT_EQ(s.published, kPackets);
  EXPECT_EQ(s.consumed, kPackets);
  EXPECT_EQ(s.released, kPackets);
  EXPECT_EQ(s.ring_full_drops, 0u);
  EXPECT_EQ(s.taken - s.returned, kPackets);
}

TEST(HostMemory, PageRoundedZeroedWritable) {
  memory::HostMemory m(5000, memory::HostMemoryOptions{memory::Want::no, memory::Want::no});
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  EXPECT_EQ(m.size(), (5000 + page - 1) / page * page);
  EXPECT_TRUE(aligned(m.data(), page));
  EXPECT_FALSE(m.huge_pages());
  EXPECT_FALSE(m.locked());
  for (std::size_t k = 0; k < m.size(); ++k)
    ASSERT_EQ(m.data()[k], std::byte{0});
  m.data()[m.size() - 1] = std::byte{1};
  EXPECT_NE(m.describe().find("huge pages: no, locked: no"), std::string::npos) << m.describe();
}

TEST(HostMemory, NumaNodeIsPreferredOrTheRefusalRecorded) {
  memory::HostMemoryOptions o{memory::Want::no, memory::Want::no,
                              4000};  // no machine has node 4000
  memory::HostMemory none(1 << 16, o);
  EXPECT_EQ(none.numa_errno(), EINVAL);
  EXPECT_NE(none.describe().find("numa node: not bound (EINVAL)"), std::string::npos)
      << none.describe();
  none.data()[none.size() - 1] = std::byte{7};  // still usable

  o.numa_node = 0;
  memory::HostMemory node0(1 << 16, o);
  for (std::size_t k = 0; k < node0.size(); k += 4096)
    ASSERT_EQ(node0.data()[k], std::byte{0});
  if (node0.numa_errno() == EPERM || node0.numa_errno() == ENOSYS)
    GTEST_SKIP() << "mbind refused here (seccomp)";
  EXPECT_EQ(node0.numa_errno(), 0);
}

uint64_t free_huge_pages() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t value = 0;
  while (in >> key >> value) {
    if (key == "HugePages_Free:") return value;
    in.ignore(256, '\n');
  }
  return 0;
}

TEST(HostMemory, HugePagesPreferFallsBackAndRequireFailsWithoutReservedPages) {
  memory::HostMemory m(1 << 20, memory::HostMemoryOptions{memory::Want::prefer, memory::Want::no});
  EXPECT_NE(m.huge_pages(), m.huge_pages_errno() != 0);
  if (m.huge_pages()) {
    EXPECT_EQ(m.size() % memory::kHugePageBytes, 0u);
  } else {
    EXPECT_NE(m.describe().find("huge pages: no ("), std::string::npos) << m.describe();
  }
  if (free_huge_pages() != 0) GTEST_SKIP() << "huge pages are reserved here: require succeeds";
  try {
    memory::HostMemory r(1 << 20,
                         memory::HostMemoryOptions{memory::Want::require, memory::Want::no});
    FAIL() << "MAP_HUGETLB succeeded without free huge pages";
  } catch (const std::system_error& e) {
    EXPECT_NE(std::string(e.what()).find("MAP_HUGETLB"), std::string::npos) << e.what();
  }
}

TEST(HostMemory, LockRequireLocksOrThrowsNamingMlock) {
  rlimit lim{};
  ASSERT_EQ(getrlimit(RLIMIT_MEMLOCK, &lim), 0);
  if (geteuid() == 0) {  // CAP_IPC_LOCK: the limit does not apply
    memory::HostMemory m(1 << 20,
                         memory::HostMemoryOptions{memory::Want::no, memory::Want::require});
    EXPECT_TRUE(m.locked());
    EXPECT_EQ(m.lock_errno(), 0);
    return;
  }
  if (lim.rlim_cur == RLIM_INFINITY) GTEST_SKIP() << "unlimited RLIMIT_MEMLOCK: mlock succeeds";
  const std::size_t over = static_cast<std::size_t>(lim.rlim_cur) * 2 + (1 << 20);
  memory::HostMemory soft(over, memory::HostMemoryOptions{memory::Want::no, memory::Want::prefer});
  EXPECT_FALSE(soft.locked());
  EXPECT_NE(soft.lock_errno(), 0);
  try {
    memory::HostMemory hard(over,
                            memory::HostMemoryOptions{memory::Want::no, memory::Want::require});
    FAIL() << "mlock over RLIMIT_MEMLOCK succeeded";
  } catch (const std::system_error& e) {
    EXPECT_NE(std::string(e.what()).find("mlock"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rocecap::capture
