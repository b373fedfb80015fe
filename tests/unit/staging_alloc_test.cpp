// A staged writer pass allocates nothing once its files are open: global operator new is
// counted in this executable and must not move while frames go ring -> stager -> raw,
// codifhdr and pcap files (staging forced on host rings with the memcpy engine).
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "capture/ingest.hpp"
#include "counting_new.hpp"
#include "test_frames.hpp"
#include "writer_test_util.hpp"
#include "writers/capture_writer.hpp"

namespace rocecap::writers {
namespace {

namespace tf = ::rocecap::test;

TEST(StagingAlloc, AStagedPassAllocatesNothing) {
  test::TempDir dir;
  capture::StreamSpec spec;
  spec.key = {tf::kGroup, tf::kPort, tf::kSrcA};
  spec.ring.slots = 64;
  spec.ring.payload_slot_bytes = 2048;
  spec.ring.memory =
      capture::memory::HostMemoryOptions{capture::memory::Want::no, capture::memory::Want::no};
  spec.sequencer.reorder_window = 4;
  capture::StreamPipeline sp(spec);
  capture::Ingest ingest({&sp}, true);
  RotationOptions rot;
  rot.buffer_bytes = 1 << 20;
  std::vector<StreamWriters> w(1);
  w[0].raw.emplace(test::simple_paths(dir.path(), "raw"), rot);
  w[0].codifhdr.emplace(test::simple_paths(dir.path(), "hdr"), rot);
  CaptureWriterOptions o;
  o.force_staging = true;
  o.staging.buffer_bytes = 8 * 2048;  // several batches per pass
  CaptureWriter writer(ingest.streams(), ingest.arrivals(), std::move(w),
                       PcapWriter(test::simple_paths(dir.path(), "cap"), rot), o, nullptr);
  // Frames built before counting; the first pass opens the files (that allocates).
  std::vector<std::vector<std::byte>> frames;
  for (uint64_t i = 0; i < 400; ++i)
    frames.push_back(tf::frame(tf::kSrcA, i));
  auto feed = [&](std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i)
      ingest.on_frame(frames[i], frames[i].size(), 1'000 + int64_t(i));
  };
  feed(0, 40);
  writer.poll();

  const std::size_t before = rocecap::test::allocations();
  std::size_t written = 0;
  for (std::size_t at = 40; at < frames.size(); at += 40) {
    feed(at, at + 40);
    written += writer.poll();
  }
  const std::size_t during = rocecap::test::allocations() - before;
  EXPECT_EQ(during, 0u);
  EXPECT_GE(written, 350u);  // the passes did write (the last frames wait in the window)
  ASSERT_NE(writer.stager(), nullptr);
  EXPECT_GT(writer.stager()->stats().batches, 40u);
  ASSERT_TRUE(writer.close().ok());
}

}  // namespace
}  // namespace rocecap::writers
