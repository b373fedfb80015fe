#include "capture/release_mask.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace rocecap::capture {
namespace {

std::vector<uint32_t> take_all(ReleaseMask& m) {
  std::vector<uint32_t> out;
  EXPECT_TRUE(m.take([&](uint32_t i) {
    out.push_back(i);
    return true;
  }));
  return out;
}

TEST(ReleaseMask, TakeVisitsMarkedStreamsLowestFirstOnceAndClearsThem) {
  ReleaseMask m(130);  // three words
  EXPECT_EQ(m.streams_capacity(), 192u);
  EXPECT_EQ(take_all(m), std::vector<uint32_t>{});
  for (const uint32_t i : {129u, 5u, 64u, 63u, 0u, 5u})
    m.mark(i);
  EXPECT_EQ(take_all(m), (std::vector<uint32_t>{0, 5, 63, 64, 129}));
  EXPECT_EQ(take_all(m), std::vector<uint32_t>{});
  m.mark(127);
  EXPECT_EQ(take_all(m), std::vector<uint32_t>{127});
}

TEST(ReleaseMask, AVisitThatFailsStopsTheTake) {
  ReleaseMask m(64);
  for (const uint32_t i : {1u, 2u, 3u})
    m.mark(i);
  std::vector<uint32_t> visited;
  EXPECT_FALSE(m.take([&](uint32_t i) {
    visited.push_back(i);
    return i != 2;
  }));
  EXPECT_EQ(visited, (std::vector<uint32_t>{1, 2}));
}

TEST(ReleaseMask, NoStreamsIsEmpty) {
  ReleaseMask m(0);
  EXPECT_EQ(m.streams_capacity(), 0u);
  EXPECT_EQ(take_all(m), std::vector<uint32_t>{});
}

// The hand-off the verbs source relies on: a writer publishes a value, then marks; a taker
// that sees the mark sees the value, and a mark made after a take is found by the next take.
// Every one of the writer's values must be seen by the time the taker has taken its last mark.
TEST(ReleaseMask, NoMarkIsLostBetweenAWriterAndTheTaker) {
  constexpr uint32_t kStreams = 70;
  constexpr uint64_t kRounds = 20'000;
  ReleaseMask m(kStreams);
  std::vector<std::atomic<uint64_t>> released(kStreams);
  std::thread writer([&] {
    for (uint64_t r = 1; r <= kRounds; ++r) {
      const auto i = static_cast<uint32_t>(r % kStreams);
      released[i].store(r, std::memory_order_relaxed);
      m.mark(i);
    }
  });
  std::vector<uint64_t> seen(kStreams, 0);
  uint64_t last_round_seen = 0;
  // Bounded: the writer ends within kRounds marks; the taker ends when it has seen the last.
  for (int polls = 0; polls < 50'000'000 && last_round_seen != kRounds; ++polls) {
    m.take([&](uint32_t i) {
      const uint64_t v = released[i].load(std::memory_order_relaxed);
      EXPECT_GE(v, seen[i]);  // never older than what a previous visit saw
      seen[i] = v;
      if (v > last_round_seen) last_round_seen = v;
      return true;
    });
  }
  writer.join();
  EXPECT_EQ(last_round_seen, kRounds);
  m.take([&](uint32_t i) {
    seen[i] = released[i].load(std::memory_order_relaxed);
    return true;
  });
  for (uint32_t i = 0; i < kStreams; ++i)
    EXPECT_EQ(seen[i], released[i].load()) << "stream " << i;
}

}  // namespace
}  // namespace rocecap::capture
