// The pcap pass after a storage stall: the arrival queue holds most of the rings, and the slots
// go back as their records are written, not once the whole backlog is (capture_writer.hpp,
// "With pcap"). And the same files as before: pcap in arrival order, raw in time order with
// fill frames, every slot released once, with the drain cut into many small steps.
#include <gtest/gtest.h>
#include <pcap/pcap.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "capture/ingest.hpp"
#include "test_frames.hpp"
#include "writer_test_util.hpp"
#include "writers/capture_writer.hpp"

namespace rocecap::writers {
namespace {

namespace tf = ::rocecap::test;
using Bytes = std::vector<std::byte>;
using capture::StreamPipeline;

capture::StreamSpec spec(uint32_t src, uint32_t slots) {
  capture::StreamSpec s;
  s.key = {tf::kGroup, tf::kPort, src};
  s.ring.slots = slots;
  s.ring.header_slot_bytes = 128;
  s.ring.payload_slot_bytes = tf::kPayload;
  s.ring.memory.huge_pages = capture::memory::Want::no;
  s.ring.memory.lock = capture::memory::Want::no;
  s.sequencer.reorder_window = 4;
  return s;
}

struct TwoStreams {
  StreamPipeline a, b;
  capture::Ingest ingest{{&a, &b}, true};
  std::vector<Status> errors;
  std::optional<CaptureWriter> writer;

  TwoStreams(const std::filesystem::path& dir, uint32_t slots, std::size_t batch, bool raw)
      : a(spec(tf::kSrcA, slots)), b(spec(tf::kSrcB, slots)) {
    RotationOptions rot;
    rot.buffer_bytes = 1 << 16;
    std::vector<StreamWriters> w(2);
    if (raw) {
      w[0].raw.emplace(test::simple_paths(dir, "rawa"), rot);
      w[1].raw.emplace(test::simple_paths(dir, "rawb"), rot);
    }
    CaptureWriterOptions opts;
    opts.batch = batch;
    writer.emplace(ingest.streams(), ingest.arrivals(), std::move(w),
                   PcapWriter(test::simple_paths(dir, "cap"), rot), opts,
                   [this](const Status& s) { errors.push_back(s); });
  }
  void feed(uint32_t src, uint64_t index, int64_t ts) {
    const auto f = tf::frame(src, index);
    ingest.on_frame(f, f.size(), ts);
  }
  uint64_t free_slots() const { return a.ring().free_slots() + b.ring().free_slots(); }
  void drain_and_close() {
    ingest.flush_all();
    for (int i = 0; i < 1000 && writer->poll() != 0; ++i) {
    }
    ASSERT_TRUE(writer->close().ok());
    EXPECT_TRUE(errors.empty());
  }
};

// The write seam sees how many slots the rings have free at each write of the pass.
const TwoStreams* g_watched = nullptr;
uint64_t g_most_free = 0;
ssize_t watching_write(int fd, const void* data, std::size_t n) {
  if (g_watched != nullptr) g_most_free = std::max(g_most_free, g_watched->free_slots());
  return ::write(fd, data, n);
}

struct Record {
  Bytes bytes;
  int64_t ns = 0;
};

std::vector<Record> read_pcap(const std::filesystem::path& path) {
  char err[PCAP_ERRBUF_SIZE];
  pcap_t* in =
      pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, err);
  EXPECT_NE(in, nullptr) << err;
  std::vector<Record> out;
  if (in == nullptr) return out;
  pcap_pkthdr* h;
  const u_char* data;
  while (pcap_next_ex(in, &h, &data) == 1) {
    const auto* p = reinterpret_cast<const std::byte*>(data);
    out.push_back({Bytes(p, p + h->caplen), int64_t(h->ts.tv_sec) * 1'000'000'000 + h->ts.tv_usec});
  }
  pcap_close(in);
  return out;
}

TEST(CaptureWriterPcapBacklog, SlotsGoBackWhileTheBacklogIsWritten) {
  test::TempDir dir;
  TwoStreams p(dir.path(), 1024, 256, false);
  // A stalled writer: 1000 frames per stream wait in the rings, 24 slots free in each.
  for (uint64_t i = 0; i < 1000; ++i) {
    p.feed(tf::kSrcA, i, 1'000'000 + int64_t(i) * 2);
    p.feed(tf::kSrcB, i, 1'000'000 + int64_t(i) * 2 + 1);
  }
  p.ingest.flush_all();
  ASSERT_EQ(p.free_slots(), 48u);

  g_watched = &p;
  g_most_free = 0;
  testing::set_write_function(watching_write);
  const std::size_t released = p.writer->poll();  // one pass over the whole backlog
  testing::set_write_function(nullptr);
  g_watched = nullptr;
  // The first step recorded 256 frames of each stream, and they went back before the second
  // step's writes; a pass that releases only at its end writes everything with 48 free.
  EXPECT_GE(g_most_free, 48u + 512u);
  // Each step also popped what was published: every slot the pass recorded went back in it
  // (it used to release the one batch per stream it popped before the drain: 512).
  EXPECT_EQ(released, 2000u);

  p.drain_and_close();
  EXPECT_EQ(p.free_slots(), 2048u);
  for (const StreamPipeline* sp : {&p.a, &p.b}) {
    const auto st = sp->ring().stats();
    EXPECT_EQ(st.released, st.published);
    EXPECT_EQ(st.consumed, st.published);
  }
  const auto records = read_pcap(p.writer->pcap()->files().at(0).path);
  ASSERT_EQ(records.size(), 2000u);
  for (uint64_t i = 0; i < 1000; ++i) {
    for (uint32_t k = 0; k < 2; ++k) {
      const Record& r = records[2 * i + k];
      const auto f = tf::frame(k == 0 ? tf::kSrcA : tf::kSrcB, i);
      ASSERT_EQ(r.bytes, Bytes(f.begin(), f.end())) << "frame " << i << " of stream " << k;
      EXPECT_EQ(r.ns, 1'000'000 + int64_t(i) * 2 + k);
    }
  }
}

// Expected raw bytes of frame `index` (any stream's: the sources differ in their IP headers
// only): as sent, or a fill frame.
void append_expected(Bytes& out, uint64_t index, bool fill) {
  capture::codif::Header h = capture::codif::at_index(tf::base_header(), tf::kTiming, index);
  h.invalid = fill;
  std::array<std::byte, 64> hb;
  capture::codif::encode(h, hb);
  out.insert(out.end(), hb.begin(), hb.end());
  for (uint32_t i = 0; i < tf::kPayload; ++i)
    out.push_back(fill ? std::byte{0} : tf::data_byte(index, i));
}

// Tiny batches (a drain step of 4 arrivals per stream), frames swapped inside the reorder
// window, lost and repeated, the writer polled at odd moments: slots popped before their
// record was written are held and released later, in order; the files are what they were.
TEST(CaptureWriterPcapBacklog, HeldSlotsKeepRawAndPcapFilesExact) {
  test::TempDir dir;
  TwoStreams p(dir.path(), 64, 2, true);
  struct Sent {
    uint32_t src;
    uint64_t index;
    bool placed;
  };
  std::vector<Sent> sent;
  for (uint64_t i = 0; i < 300; ++i) {
    if (i % 50 == 17) continue;  // lost: a fill frame in the raw files
    const uint64_t j = (i % 10 == 3) ? i + 1 : (i % 10 == 4) ? i - 1 : i;  // 3 and 4 swapped
    if (j % 50 == 17) continue;
    for (uint32_t src : {tf::kSrcA, tf::kSrcB}) {
      sent.push_back({src, j, true});
      if (j % 40 == 9) sent.push_back({src, j, false});  // a duplicate: not recorded
    }
  }
  for (std::size_t k = 0; k < sent.size(); ++k) {
    p.feed(sent[k].src, sent[k].index, 7'000'000 + int64_t(k));
    if (k % 37 == 36) p.writer->poll();
  }
  p.drain_and_close();

  const auto records = read_pcap(p.writer->pcap()->files().at(0).path);
  std::size_t r = 0;
  for (std::size_t k = 0; k < sent.size(); ++k) {
    if (!sent[k].placed) continue;
    ASSERT_LT(r, records.size());
    const auto f = tf::frame(sent[k].src, sent[k].index);
    ASSERT_EQ(records[r].bytes, Bytes(f.begin(), f.end())) << "arrival " << k;
    EXPECT_EQ(records[r].ns, 7'000'000 + int64_t(k));
    ++r;
  }
  EXPECT_EQ(r, records.size());
  for (std::size_t s = 0; s < 2; ++s) {
    Bytes raw;
    for (uint64_t i = 0; i < 300; ++i)
      append_expected(raw, i, i % 50 == 17);
    EXPECT_EQ(test::read_file(p.writer->writers(s).raw->files().at(0).path), raw) << s;
    const auto st = (s == 0 ? p.a : p.b).ring().stats();
    EXPECT_EQ(st.ring_full_drops, 0u);  // the writer kept up: every frame sent is expected
    EXPECT_EQ(st.released, st.published);
  }
}

}  // namespace
}  // namespace rocecap::writers
