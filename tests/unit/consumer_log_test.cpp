// The writer side of consumers (writers/consumer_log.hpp) read by the real client
// (consumer/client/rocecap_consumer.hpp) through the same memfds a consumer is sent: frames
// fed through the Ingest (split at 128 bytes, so data straddles header and payload slots)
// come out of the descriptor log in time order, byte-identical to the raw file, fill frames
// included; a slot the producer takes again is never handed out as the old frame.
#include "writers/consumer_log.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

#include "capture/ingest.hpp"
#include "consumer/client/rocecap_consumer.hpp"
#include "test_frames.hpp"
#include "writer_test_util.hpp"
#include "writers/capture_writer.hpp"

namespace rocecap::writers {
namespace {

namespace tf = ::rocecap::test;
using Bytes = std::vector<std::byte>;

capture::StreamSpec spec(uint32_t slots) {
  capture::StreamSpec s;
  s.key = {tf::kGroup, tf::kPort, tf::kSrcA};
  s.ring.slots = slots;
  s.ring.header_slot_bytes = 128;
  s.ring.payload_slot_bytes = tf::kPayload;
  s.ring.memory.huge_pages = capture::memory::Want::no;
  s.ring.memory.lock = capture::memory::Want::no;
  s.sequencer.reorder_window = 4;
  return s;
}

int read_only(int fd) {
  return ::open(("/proc/self/fd/" + std::to_string(fd)).c_str(), O_RDONLY | O_CLOEXEC);
}

struct Pipeline {
  capture::StreamPipeline a;
  capture::Ingest ingest{{&a}, true};
  ConsumerLog log;
  std::optional<CaptureWriter> writer;

  Pipeline(const std::filesystem::path& dir, uint32_t slots, uint32_t log_frames)
      : a(spec(slots)), log(a, ConsumerLogOptions{log_frames, true}) {
    RotationOptions rot;
    rot.buffer_bytes = 1 << 16;
    std::vector<StreamWriters> w(1);
    w[0].raw.emplace(test::simple_paths(dir, "raw"), rot);
    writer.emplace(ingest.streams(), ingest.arrivals(), std::move(w), std::nullopt,
                   CaptureWriterOptions{}, [](const Status&) {});
    writer->set_consumer_log(0, &log);
  }
  void feed(uint64_t index) {
    const auto f = tf::frame(tf::kSrcA, index);
    ingest.on_frame(f, f.size(), 1'000'000 + int64_t(index));
  }
  void drain() {
    ingest.flush_all();
    while (writer->poll() != 0) {
    }
  }
  // What a consumer is handed: read-only descriptors of the three memories.
  consumer::Stream attach() {
    const int c = read_only(log.control().fd());
    const int h = read_only(a.ring().header_memory().fd());
    const auto& payload =
        dynamic_cast<const capture::memory::HostMemory&>(a.ring().payload_memory());
    const int p = read_only(payload.fd());
    consumer::StreamInfo info;
    info.name = "a";
    info.format = "codif";
    info.payload_memory = "host";
    consumer::Stream s(info, c, h, p);
    ::close(c);
    ::close(h);
    ::close(p);
    return s;
  }
};

TEST(ConsumerLog, AConsumerReadsTheRawFileByteForByteFillFramesIncluded) {
  test::TempDir dir;
  Pipeline p(dir.path(), 64, 1024);
  consumer::Stream s = p.attach();
  // 3 and 4 lost, 7 after 8 (placed back), 9 twice.
  for (uint64_t i : {0, 1, 2, 5, 6, 8, 7, 9, 9, 10})
    p.feed(1000 + i);
  p.drain();
  p.log.end();
  ASSERT_TRUE(p.writer->close().ok());
  const Bytes raw = test::read_file(p.writer->writers(0).raw->files().at(0).path);

  Bytes got;
  consumer::Frame f;
  uint64_t fill = 0;
  consumer::Event e;
  while ((e = s.next(f)) == consumer::Event::frame) {
    Bytes one(f.size());
    ASSERT_TRUE(s.copy(f, one));
    got.insert(got.end(), one.begin(), one.end());
    fill += f.fill() ? 1 : 0;
    EXPECT_EQ(f.fill(), f.frame_index == 1003 || f.frame_index == 1004) << f.frame_index;
  }
  EXPECT_EQ(e, consumer::Event::ended);
  EXPECT_EQ(fill, 2u);
  EXPECT_EQ(s.frames_read(), 11u);
  EXPECT_EQ(s.frames_missed(), 0u);
  EXPECT_EQ(got, raw);
}

TEST(ConsumerLog, ASlotTakenAgainIsMissedNeverReturnedAsTheOldFrame) {
  test::TempDir dir;
  Pipeline p(dir.path(), 16, 1024);
  consumer::Stream s = p.attach();
  for (uint64_t i = 0; i < 8; ++i)
    p.feed(i);
  p.drain();
  consumer::Frame first;
  ASSERT_EQ(s.next(first), consumer::Event::frame);
  EXPECT_EQ(first.frame_index, 0u);
  EXPECT_TRUE(s.still_valid(first));
  // 40 more frames through a ring of 16 slots: every slot is taken again by the producer.
  for (uint64_t i = 8; i < 48; ++i) {
    p.feed(i);
    if (i % 4 == 0) p.drain();
  }
  p.drain();
  EXPECT_FALSE(s.still_valid(first));  // the frame read before is reported torn now
  consumer::Frame f;
  uint64_t frames = 0, missed = 0;
  consumer::Event e;
  while ((e = s.next(f)) != consumer::Event::none) {
    if (e == consumer::Event::missed) {
      missed += s.last_missed();
      continue;
    }
    ASSERT_EQ(e, consumer::Event::frame);
    ++frames;
    // What is handed out is the frame the descriptor names, never a newer one.
    Bytes one(f.size());
    ASSERT_TRUE(s.copy(f, one));
    const auto sent = tf::frame(tf::kSrcA, f.frame_index);
    ASSERT_EQ(0, std::memcmp(one.data(), sent.data() + (sent.size() - one.size()), one.size()))
        << f.frame_index;
  }
  EXPECT_GT(missed, 0u);
  EXPECT_EQ(1 + frames + missed, 48u);  // every position once: read or missed
}

TEST(ConsumerLog, ALappedReaderIsToldHowManyFramesItMissedFromWhichIndex) {
  test::TempDir dir;
  Pipeline p(dir.path(), 64, 16);
  consumer::Stream s = p.attach();
  for (uint64_t i = 0; i < 40; ++i) {
    p.feed(500 + i);
    p.drain();
  }
  consumer::Frame f;
  ASSERT_EQ(s.next(f), consumer::Event::missed);
  EXPECT_EQ(f.frame_index, 500u);
  const uint64_t missed = s.last_missed();
  EXPECT_GE(missed, 40u - 16u);
  ASSERT_EQ(s.next(f), consumer::Event::frame);
  EXPECT_EQ(f.frame_index, 500u + missed);
}

TEST(ConsumerLog, TheMemoryHandedToConsumersCannotBeMappedWritable) {
  test::TempDir dir;
  Pipeline p(dir.path(), 16, 64);
  const auto& payload =
      dynamic_cast<const capture::memory::HostMemory&>(p.a.ring().payload_memory());
  const int memfds[] = {p.log.control().fd(), p.a.ring().header_memory().fd(), payload.fd()};
  for (int memfd : memfds) {
    const int fd = read_only(memfd);
    ASSERT_GE(fd, 0);
    errno = 0;
    void* m = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    EXPECT_EQ(m, MAP_FAILED);
    EXPECT_EQ(errno, EACCES);
    ::close(fd);
    // Reopened for writing (root may; anyone else is refused by the mode, 0400), the sealed
    // memory still cannot be mapped writable nor written.
    const int rw = ::open(("/proc/self/fd/" + std::to_string(memfd)).c_str(), O_RDWR | O_CLOEXEC);
    if (rw < 0) {
      EXPECT_EQ(errno, EACCES);
      continue;
    }
    errno = 0;
    m = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, rw, 0);
    EXPECT_EQ(m, MAP_FAILED);
    EXPECT_EQ(errno, EPERM);
    const char byte = 1;
    EXPECT_EQ(::pwrite(rw, &byte, 1, 0), -1);
    ::close(rw);
  }
  struct stat st {};
  ASSERT_EQ(::fstat(memfds[0], &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0400u);
}

}  // namespace
}  // namespace rocecap::writers
