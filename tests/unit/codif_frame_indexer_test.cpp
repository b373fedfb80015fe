// FrameIndexer gives exactly absolute_index() of the decoded header, and refuses packets whose
// constant header fields differ from the learned stream.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "capture/codif/frame_indexer.hpp"
#include "codif_test_util.hpp"

namespace rocecap::capture::codif {
namespace {

using test::askap;
using test::payload;
using Status = FrameIndexer::Status;

SyncSet all_syncs() {
  SyncSet s = SyncSet::defaults();
  s.add(kSyncAdeadbee, Layout::v3);
  return s;
}

// The slow path's answer for one payload.
uint64_t slow_index(const std::vector<std::byte>& p) {
  Header h;
  EXPECT_TRUE(decode(p, all_syncs(), h));
  Timing t;
  EXPECT_EQ(validate(h, p.size(), t), Invalid::ok);
  return absolute_index(h, t);
}

class FrameIndexerLayouts : public testing::TestWithParam<Layout> {};

TEST_P(FrameIndexerLayouts, SameIndexAsTheSlowPath) {
  FrameIndexer ix;
  const Header base = askap(GetParam());
  ASSERT_EQ(ix.learn(payload(base), all_syncs()), Invalid::ok);
  EXPECT_EQ(ix.timing().frames_per_period, 62'500u);
  std::mt19937_64 rng(42);
  for (int i = 0; i < 5000; ++i) {
    Header h = base;
    h.seconds = static_cast<uint32_t>(rng() % (1u << 30));
    if (i % 2 == 0) h.seconds -= h.seconds % 27;  // mostly on the period grid
    h.frame = static_cast<uint32_t>(rng() % 62'500);
    h.invalid = (rng() & 1) != 0;
    h.cal = (rng() & 1) != 0;
    const auto p = payload(h);
    FrameIndexer::Result r;
    ASSERT_EQ(ix.index(p, r), Status::ok) << i;
    EXPECT_EQ(r.index, slow_index(p)) << "seconds " << h.seconds << " frame " << h.frame;
    EXPECT_EQ(r.invalid, h.invalid);
  }
}

TEST_P(FrameIndexerLayouts, ConsecutiveFramesAcrossPeriods) {
  FrameIndexer ix;
  Header h = askap(GetParam());
  h.seconds = 27 * 100;
  h.frame = 62'490;
  ASSERT_EQ(ix.learn(payload(h), all_syncs()), Invalid::ok);
  const Timing t = ix.timing();
  const uint64_t first = absolute_index(h, t);
  EXPECT_EQ(first, 100u * 62'500 + 62'490);
  for (uint64_t n = 0; n < 200'000; n += 7) {
    FrameIndexer::Result r;
    ASSERT_EQ(ix.index(payload(advance(h, t, n)), r), Status::ok);
    ASSERT_EQ(r.index, first + n);
  }
}

TEST(FrameIndexer, V3MetadataMayChange) {
  FrameIndexer ix;
  Header h = askap(Layout::v3);
  ASSERT_EQ(ix.learn(payload(h), all_syncs()), Invalid::ok);
  h.metadata_id = 0x1234;
  h.metadata = {1, 2};
  FrameIndexer::Result r;
  EXPECT_EQ(ix.index(payload(h), r), Status::ok);
}

// Every constant field: a packet differing in it alone is refused.
TEST_P(FrameIndexerLayouts, RejectsChangedConstantFields) {
  const Layout layout = GetParam();
  const bool v3 = layout == Layout::v3;
  FrameIndexer ix;
  ASSERT_EQ(ix.learn(payload(askap(layout)), all_syncs()), Invalid::ok);
  const std::vector<std::pair<const char*, std::function<void(Header&)>>> changes = {
      {"epoch", [](Header& h) { h.epoch = 41; }},
      {"nbits", [](Header& h) { h.nbits = 8; }},
      {"complex", [](Header& h) { h.complex = false; }},
      {"representation", [](Header& h) { h.representation = 1; }},
      {"version", [](Header& h) { h.version = 2; }},
      {"period", [](Header& h) { h.period = 9; }},
      {"thread", [](Header& h) { h.thread_id = 4; }},
      {"group", [](Header& h) { h.group_id = 8; }},
      {"station", [](Header& h) { h.station_id = station_id('A', 'L'); }},
      {"nchan", [](Header& h) { h.nchan = 2; }},
      {"block length", [](Header& h) { h.block_length = 16; }},
      {"data length", [](Header& h) { h.data_words = 512; }},  // payload length kept below
      {"total samples", [](Header& h) { h.total_samples = 16'000'000; }},
  };
  for (const auto& [name, change] : changes) {
    Header h = askap(layout);
    change(h);
    auto p = payload(askap(layout));
    encode(h, std::span<std::byte, kHeaderBytes>(p.data(), kHeaderBytes));
    FrameIndexer::Result r;
    EXPECT_EQ(ix.index(p, r), Status::stream_changed) << name;
  }
  std::vector<std::pair<const char*, std::function<void(Header&)>>> v3_only = {
      {"atypical", [](Header& h) { h.atypical = true; }},
      {"protocol", [](Header& h) { h.protocol = 2; }},
      {"secondary", [](Header& h) { h.secondary_id = 1; }},
      {"sync", [](Header& h) { h.sync = kSyncAdeadbee; }},
  };
  for (const auto& [name, change] : v3_only) {
    if (!v3) break;
    Header h = askap(layout);
    change(h);
    FrameIndexer::Result r;
    EXPECT_EQ(ix.index(payload(h), r), Status::stream_changed) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Both, FrameIndexerLayouts, testing::Values(Layout::v3, Layout::v1),
                         [](const auto& param_info) {
                           return param_info.param == Layout::v3 ? "v3" : "v1";
                         });

TEST(FrameIndexer, OtherLayoutIsAChangedStream) {
  FrameIndexer ix;
  ASSERT_EQ(ix.learn(payload(askap(Layout::v3)), all_syncs()), Invalid::ok);
  FrameIndexer::Result r;
  EXPECT_EQ(ix.index(payload(askap(Layout::v1)), r), Status::stream_changed);
}

TEST(FrameIndexer, NotLearnedSizeAndRange) {
  FrameIndexer ix;
  FrameIndexer::Result r;
  const auto p = payload(askap());
  EXPECT_EQ(ix.index(p, r), Status::not_learned);
  EXPECT_EQ(ix.index({}, r), Status::not_learned);
  ASSERT_EQ(ix.learn(p, all_syncs()), Invalid::ok);
  EXPECT_TRUE(ix.learned());
  EXPECT_EQ(ix.index(std::span(p).first(p.size() - 8), r), Status::size_mismatch);
  EXPECT_EQ(ix.index({}, r), Status::size_mismatch);
  Header h = askap();
  h.frame = 62'500;
  EXPECT_EQ(ix.index(payload(h), r), Status::frame_out_of_range);
  ix.forget();
  EXPECT_FALSE(ix.learned());
  EXPECT_EQ(ix.index(p, r), Status::not_learned);
}

TEST(FrameIndexer, FailedLearnKeepsTheStream) {
  FrameIndexer ix;
  const Header h = askap();
  ASSERT_EQ(ix.learn(payload(h), all_syncs()), Invalid::ok);
  Header bad = askap();
  bad.nchan = 0;
  EXPECT_EQ(ix.learn(payload(bad), all_syncs()), Invalid::zero_nchan);
  auto junk = payload(h);
  junk[40] = std::byte{0};  // sync
  EXPECT_EQ(ix.learn(junk, all_syncs()), Invalid::bad_sync);
  EXPECT_EQ(ix.header(), h);
  FrameIndexer::Result r;
  EXPECT_EQ(ix.index(payload(h), r), Status::ok);
}

TEST(FrameIndexer, RelearnAfterChange) {
  FrameIndexer ix;
  ASSERT_EQ(ix.learn(payload(askap()), all_syncs()), Invalid::ok);
  Header h = askap();
  h.epoch = 41;
  h.seconds = 270;
  h.frame = 9;
  FrameIndexer::Result r;
  ASSERT_EQ(ix.index(payload(h), r), Status::stream_changed);
  ASSERT_EQ(ix.learn(payload(h), all_syncs()), Invalid::ok);
  ASSERT_EQ(ix.index(payload(h), r), Status::ok);
  EXPECT_EQ(r.index, 10u * 62'500 + 9);
}

TEST(FrameIndexer, SplitPacketHeadOnly) {
  Header h = askap();
  h.seconds = 27 * 2;
  h.frame = 77;
  const auto p = payload(h);
  FrameIndexer ix;
  EXPECT_EQ(ix.learn(std::span(p).first(63), p.size(), all_syncs()), Invalid::bad_sync);
  ASSERT_EQ(ix.learn(std::span(p).first(64), p.size(), all_syncs()), Invalid::ok);
  FrameIndexer::Result r;
  ASSERT_EQ(ix.index(std::span(p).first(48), p.size(), r), Status::ok);
  EXPECT_EQ(r.index, 2u * 62'500 + 77);
  EXPECT_EQ(ix.index(std::span(p).first(47), p.size(), r), Status::header_not_readable);
  EXPECT_EQ(ix.index(std::span(p).first(48), p.size() + 8, r), Status::size_mismatch);
}

TEST(FrameIndexer, StatusNames) {
  EXPECT_EQ(to_string(Status::ok), "ok");
  EXPECT_EQ(to_string(Status::not_learned), "not_learned");
  EXPECT_EQ(to_string(Status::size_mismatch), "size_mismatch");
  EXPECT_EQ(to_string(Status::stream_changed), "stream_changed");
  EXPECT_EQ(to_string(Status::frame_out_of_range), "frame_out_of_range");
  EXPECT_EQ(to_string(Status::header_not_readable), "header_not_readable");
}

}  // namespace
}  // namespace rocecap::capture::codif
