// Ring to files: frames fed through the Ingest (split at 128 bytes, so every frame's data
// straddles the header and payload slots) come out byte-exact in raw and codifhdr files with
// fill frames for gaps, and in the pcap file in arrival order.
#include "writers/capture_writer.hpp"

#include <gtest/gtest.h>
#include <pcap/pcap.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "capture/ingest.hpp"
#include "test_frames.hpp"
#include "writer_test_util.hpp"

namespace rocecap::writers {
namespace {

namespace tf = ::rocecap::test;  // test_frames.hpp (writers::test is the writer helpers)
using Bytes = std::vector<std::byte>;
using capture::StreamPipeline;

capture::StreamSpec spec(uint32_t src) {
  capture::StreamSpec s;
  s.key = {tf::kGroup, tf::kPort, src};
  s.ring.slots = 64;
  s.ring.header_slot_bytes = 128;
  s.ring.payload_slot_bytes = tf::kPayload;
  s.ring.memory.huge_pages = capture::memory::Want::no;
  s.ring.memory.lock = capture::memory::Want::no;
  s.sequencer.reorder_window = 4;
  return s;
}

// Expected raw bytes of frame `index`: as sent, or a fill frame (invalid header, zero data).
void append_expected(Bytes& out, uint64_t index, bool fill, bool header) {
  capture::codif::Header h = capture::codif::at_index(tf::base_header(), tf::kTiming, index);
  h.invalid = fill;
  std::array<std::byte, 64> hb;
  capture::codif::encode(h, hb);
  if (header) out.insert(out.end(), hb.begin(), hb.end());
  if (!header) return;
  for (uint32_t i = 0; i < tf::kPayload; ++i) {
    out.push_back(fill ? std::byte{0} : tf::data_byte(index, i));
  }
}

struct Pipeline {
  StreamPipeline a{spec(tf::kSrcA)};
  capture::Ingest ingest{{&a}, true};
  std::vector<Status> errors;
  std::optional<CaptureWriter> writer;

  explicit Pipeline(const std::filesystem::path& dir) {
    RotationOptions rot;
    rot.buffer_bytes = 1 << 16;
    std::vector<StreamWriters> w(1);
    w[0].raw.emplace(test::simple_paths(dir, "raw"), rot);
    w[0].codifhdr.emplace(test::simple_paths(dir, "hdr"), rot);
    writer.emplace(ingest.streams(), ingest.arrivals(), std::move(w),
                   PcapWriter(test::simple_paths(dir, "cap"), rot), CaptureWriterOptions{},
                   [this](const Status& s) { errors.push_back(s); });
  }
  void feed(uint64_t index, int64_t ts) {
    const auto f = tf::frame(tf::kSrcA, index);
    ingest.on_frame(f, f.size(), ts);
  }
};

TEST(CaptureWriter, RawAndHeaderFilesAreTimeAlignedWithFillFrames) {
  test::TempDir dir;
  Pipeline p(dir.path());
  // 3 and 4 lost, 7 arrives after 8 (placed back), 9 twice.
  const std::vector<uint64_t> sent = {0, 1, 2, 5, 6, 8, 7, 9, 9, 10};
  for (std::size_t i = 0; i < sent.size(); ++i) {
    p.feed(1000 + sent[i], 1'000'000 + int64_t(i));
    if (i % 3 == 0) p.writer->poll();  // interleave like the real threads
  }
  p.ingest.flush_all();
  while (p.writer->poll() != 0) {
  }
  ASSERT_TRUE(p.writer->close().ok());
  EXPECT_TRUE(p.errors.empty());

  Bytes raw, hdr;
  for (uint64_t i = 0; i <= 10; ++i) {
    const bool fill = i == 3 || i == 4;
    append_expected(raw, 1000 + i, fill, true);
    Bytes one;
    append_expected(one, 1000 + i, fill, true);
    hdr.insert(hdr.end(), one.begin(), one.begin() + 64);
  }
  EXPECT_EQ(test::read_file(p.writer->writers(0).raw->files().at(0).path), raw);
  EXPECT_EQ(test::read_file(p.writer->writers(0).codifhdr->files().at(0).path), hdr);
  const StreamWriteState& st = p.writer->state(0);
  EXPECT_EQ(st.frames, 9u);
  ASSERT_EQ(st.gaps.size(), 1u);
  EXPECT_EQ(st.gaps[0].first_index, 1003u);
  EXPECT_EQ(st.gaps[0].count, 2u);
  EXPECT_EQ(p.writer->writers(0).raw->stats().fill_frames, 2u);
}

TEST(CaptureWriter, PcapRecordsFollowArrivalOrderWithTheirTimes) {
  test::TempDir dir;
  Pipeline p(dir.path());
  const std::vector<uint64_t> sent = {0, 2, 1, 3, 3, 4};  // the second 3 is a duplicate
  for (std::size_t i = 0; i < sent.size(); ++i)
    p.feed(sent[i], 5'000'000'000 + int64_t(i) * 7);
  p.ingest.flush_all();
  while (p.writer->poll() != 0) {
  }
  ASSERT_TRUE(p.writer->close().ok());

  char err[PCAP_ERRBUF_SIZE];
  const auto path = p.writer->pcap()->files().at(0).path;
  pcap_t* in =
      pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, err);
  ASSERT_NE(in, nullptr) << err;
  const std::vector<std::size_t> placed = {0, 1, 2, 3, 5};  // positions in `sent`
  pcap_pkthdr* h;
  const u_char* data;
  for (std::size_t k : placed) {
    ASSERT_EQ(pcap_next_ex(in, &h, &data), 1) << k;
    const auto f = tf::frame(tf::kSrcA, sent[k]);
    EXPECT_EQ(h->len, f.size());
    ASSERT_EQ(h->caplen, f.size());
    EXPECT_EQ(0, std::memcmp(data, f.data(), f.size())) << "record of frame " << sent[k];
    EXPECT_EQ(int64_t(h->ts.tv_sec) * 1'000'000'000 + h->ts.tv_usec,
              5'000'000'000 + int64_t(k) * 7);
  }
  EXPECT_EQ(pcap_next_ex(in, &h, &data), PCAP_ERROR_BREAK);
  pcap_close(in);
}

// Issue 23, item 12: the writer loop's flush (every kFlushInterval) hands every file's buffered
// bytes to the kernel, headers included: a SIGKILL right after it loses none of them.
TEST(CaptureWriter, FlushPutsEveryBufferedFrameInTheFilesBeforeTheClose) {
  test::TempDir dir;
  Pipeline p(dir.path());
  for (uint64_t i = 0; i < 20; ++i)
    p.feed(1000 + i, 1'000'000 + int64_t(i));
  p.ingest.flush_all();
  while (p.writer->poll() != 0) {
  }
  const auto size_of = [](const std::vector<FileRecord>& files) {
    return std::filesystem::file_size(files.at(0).path);
  };
  EXPECT_EQ(size_of(p.writer->writers(0).codifhdr->files()), 0u) << "64 KiB buffer: not full";
  p.writer->flush();
  EXPECT_TRUE(p.errors.empty());
  EXPECT_EQ(size_of(p.writer->writers(0).codifhdr->files()), 20u * 64);
  EXPECT_EQ(size_of(p.writer->writers(0).raw->files()), 20u * (64 + tf::kPayload));
  EXPECT_EQ(size_of(p.writer->pcap()->files()), p.writer->pcap()->files().at(0).bytes);
  ASSERT_TRUE(p.writer->close().ok());
}

// vdifhdr alike (32-byte headers: a 1 MiB buffer holds 32768 frames).
TEST(CaptureWriter, VdifHeaderFilesAreFlushedAlike) {
  test::TempDir dir;
  RotationOptions rot;
  rot.buffer_bytes = 1 << 16;
  VdifHeaderWriter w(test::simple_paths(dir.path(), "vhead"), rot);
  const Bytes header = test::pattern(32, 7);
  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(w.write_frame(header).ok());
  ASSERT_TRUE(w.flush().ok());
  EXPECT_EQ(std::filesystem::file_size(w.files().at(0).path), 10u * 32);
  ASSERT_TRUE(w.close().ok());
}

TEST(CaptureWriter, PcapOutputWithoutArrivalQueueIsRefused) {
  test::TempDir dir;
  StreamPipeline a{spec(tf::kSrcA)};
  capture::Ingest ingest{{&a}, false};
  RotationOptions rot;
  rot.buffer_bytes = 1 << 16;
  EXPECT_THROW(CaptureWriter(ingest.streams(), ingest.arrivals(), std::vector<StreamWriters>(1),
                             PcapWriter(test::simple_paths(dir.path(), "c"), rot), {}, {}),
               std::invalid_argument);
}

}  // namespace
}  // namespace rocecap::writers
