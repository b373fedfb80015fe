// Disk errors: every failure is returned once and counted, the broken file keeps only whole,
// intact frames, every frame not written is counted lost (write_error) and listed by index, and
// the stream retries into the next file number after a bounded back-off. Unprivileged through
// RLIMIT_FSIZE (EFBIG); a real ENOSPC on a 1 MiB tmpfs when running as root.
#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <vector>

#include "writer_test_util.hpp"
#include "writers/codif_header_writer.hpp"
#include "writers/raw_writer.hpp"

namespace rocecap::writers {
namespace {

using test::Bytes;

struct Stream {
  std::size_t header = 64, data = 512;
  std::size_t frame() const { return header + data; }
  Bytes header_of(uint32_t i) const { return test::pattern(header, i); }
  Bytes data_of(uint32_t i) const { return test::pattern(data, 100000 + i); }
  Bytes frames(uint32_t first, std::size_t n) const {
    Bytes b;
    for (uint32_t i = first; i < first + n; ++i) {
      test::append(b, header_of(i));
      test::append(b, data_of(i));
    }
    return b;
  }
};

// A clock the test moves: the writer retries only when it says the back-off has passed.
int64_t g_now_ns = 0;
int64_t test_clock() {
  return g_now_ns;
}
constexpr int64_t kMs = 1'000'000;

RotationOptions rotation(uint64_t max_bytes, std::size_t buffer_bytes) {
  RotationOptions o;
  o.max_bytes = max_bytes;
  o.buffer_bytes = buffer_bytes;
  o.clock = test_clock;
  o.retry.first = std::chrono::milliseconds(100);
  o.retry.max = std::chrono::milliseconds(400);
  g_now_ns = 0;
  return o;
}

struct Outcome {
  std::vector<uint32_t> failed_at;  // frame numbers whose write returned an error
  std::vector<Status> errors;
};

Status write_one(RawWriter& w, const Stream& s, uint32_t i) {
  const Bytes h = s.header_of(i), d = s.data_of(i);
  return w.write_frame(std::span<const std::byte, 64>(h.data(), 64), d);
}

// `step_ns`: how far the clock moves after each frame.
Outcome write_stream(RawWriter& w, const Stream& s, uint32_t count, uint32_t first = 0,
                     int64_t step_ns = 0) {
  Outcome o;
  for (uint32_t i = first; i < first + count; ++i) {
    Status st = write_one(w, s, i);
    if (!st.ok()) o.failed_at.push_back(i), o.errors.push_back(std::move(st));
    g_now_ns += step_ns;
  }
  return o;
}

// What every run must satisfy, errors or not: each file a whole number of intact frames, the
// files in order holding exactly the frames 0..total-1 that the write_error gaps do not name,
// and counters that add up (every frame written or counted lost).
void expect_consistent(RawWriter& w, const Stream& s, uint32_t total) {
  uint64_t bytes = 0, frames = 0;
  Bytes in_files;
  for (const FileRecord& f : w.files()) {
    SCOPED_TRACE(f.path.string());
    const Bytes on_disk = test::read_file(f.path);
    EXPECT_EQ(on_disk.size(), f.bytes);
    EXPECT_EQ(on_disk.size() % s.frame(), 0u);
    EXPECT_EQ(f.records, on_disk.size() / s.frame());
    EXPECT_FALSE(f.open);
    test::append(in_files, on_disk);
    bytes += f.bytes;
    frames += f.records;
  }
  std::vector<bool> lost(total, false);
  uint64_t in_gaps = 0;
  for (const auto& [first, count] : w.stats().write_loss.gaps) {
    for (uint64_t i = first; i < first + count && i < total; ++i)
      lost[i] = true;
    in_gaps += count;
  }
  Bytes expected;
  for (uint32_t i = 0; i < total; ++i) {
    if (!lost[i]) test::append(expected, s.frames(i, 1));
  }
  EXPECT_TRUE(in_files == expected) << "the files are not the frames outside the gaps";
  EXPECT_EQ(w.stats().bytes_written, bytes);
  EXPECT_EQ(w.stats().frames_written, frames);
  EXPECT_EQ(w.stats().frames_written + w.stats().frames_dropped, total);
  EXPECT_EQ(w.stats().write_loss.frames + w.stats().write_loss.fills, w.stats().frames_dropped);
  EXPECT_EQ(in_gaps, w.stats().frames_dropped) << "every lost frame is in a gap";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Issue 16: a short disk-full must not stop the stream for the rest of the run.
TEST(WriterErrors, AfterAnErrorTheWriterRetriesIntoANewFileAfterTheBackOff) {
  test::TempDir dir;
  const Stream s;
  constexpr std::size_t kPerFile = 10;
  RawWriter w(test::simple_paths(dir.path()), rotation(kPerFile * s.frame(), 4096));
  Outcome o;
  {
    test::FileSizeLimit limit(3000);  // f.0 breaks after 5 whole frames (2880 bytes)
    ASSERT_TRUE(limit.ok());
    o = write_stream(w, s, 8);  // the 4096-byte buffer fills during frame 7
  }
  // The "disk" has room again, but the back-off has not passed: still lost, no new file.
  const Outcome waiting = write_stream(w, s, 2, 8);
  EXPECT_TRUE(waiting.errors.empty());
  EXPECT_EQ(w.files().size(), 1u);
  g_now_ns += 100 * kMs;
  const Outcome after = write_stream(w, s, 10, 10);
  EXPECT_TRUE(after.errors.empty());
  ASSERT_TRUE(w.close().ok());

  ASSERT_EQ(o.failed_at, std::vector<uint32_t>{7});
  EXPECT_EQ(o.errors[0].code(), EFBIG);
  EXPECT_TRUE(contains(o.errors[0].message(), (dir.path() / "f.0").string()));
  const auto& files = w.files();
  ASSERT_EQ(files.size(), 2u);
  EXPECT_TRUE(files[0].failed);
  EXPECT_EQ(files[0].records, 5u);
  EXPECT_EQ(files[1].path, dir.path() / "f.1") << "the retry opens the NEXT sequence number";
  EXPECT_EQ(files[1].records, 10u);
  EXPECT_EQ(test::read_file(files[1].path), s.frames(10, 10)) << "it starts at the retry";
  EXPECT_EQ(w.stats().retries, 1u);
  EXPECT_EQ(w.stats().write_errors, 1u);
  EXPECT_EQ(w.stats().write_loss.frames, 5u);
  EXPECT_EQ(w.stats().write_loss.fills, 0u);
  using Gaps = std::vector<std::pair<uint64_t, uint64_t>>;
  EXPECT_EQ(w.stats().write_loss.gaps, (Gaps{{5, 5}}));
  expect_consistent(w, s, 20);
}

TEST(WriterErrors, RetriesBackOffExponentiallyUpToTheBound) {
  int attempts = 0;
  const Stream s;
  RawWriter w(
      [&](uint64_t, std::filesystem::path&) {
        ++attempts;
        return Status::error(ENOSPC, "no room");
      },
      rotation(0, 4096));
  // One frame every 50 ms for 2 s: attempts at 0, 100, 300 (+200), 700 (+400), then every
  // 400 ms (the bound): 1100, 1500, 1900.
  const Outcome o = write_stream(w, s, 41, 0, 50 * kMs);
  EXPECT_EQ(attempts, 7);
  EXPECT_EQ(o.failed_at, (std::vector<uint32_t>{0, 2, 6, 14, 22, 30, 38}));
  EXPECT_EQ(w.stats().write_errors, 7u);
  EXPECT_EQ(w.stats().write_loss.frames, 41u);
  using Gaps = std::vector<std::pair<uint64_t, uint64_t>>;
  EXPECT_EQ(w.stats().write_loss.gaps, (Gaps{{0, 41}}));
}

TEST(WriterErrors, LostFillFramesAreCountedApartAndListedByIndex) {
  const Stream s;
  RawWriter w([](uint64_t, std::filesystem::path&) { return Status::error(ENOSPC, "full"); },
              rotation(0, 4096));
  capture::codif::Header missing;
  missing.data_words = 64;
  w.set_next_index(1000);
  (void)write_one(w, s, 0);
  EXPECT_TRUE(
      w.write_fill(missing, {.samples_per_frame = 512, .frames_per_period = 10, .period = 1}, 4)
          .ok());
  w.set_next_index(1010);
  (void)write_one(w, s, 1);
  EXPECT_EQ(w.stats().write_loss.frames, 2u);
  EXPECT_EQ(w.stats().write_loss.fills, 4u);
  EXPECT_EQ(w.stats().fill_frames, 0u);
  using Gaps = std::vector<std::pair<uint64_t, uint64_t>>;
  EXPECT_EQ(w.stats().write_loss.gaps, (Gaps{{1000, 5}, {1010, 1}}));
}

ssize_t eio_write(int, const void*, std::size_t) {
  errno = EIO;
  return -1;
}

TEST(WriterErrors, EioIsAStorageLossUnlikeAFullDisk) {
  test::TempDir dir;
  const Stream s;
  RawWriter w(test::simple_paths(dir.path()), rotation(0, 4096));
  testing::set_write_function(eio_write);
  const Outcome o = write_stream(w, s, 10);
  testing::set_write_function(nullptr);
  ASSERT_EQ(o.errors.size(), 1u);
  EXPECT_EQ(o.errors[0].code(), EIO);
  EXPECT_TRUE(contains(o.errors[0].message(), "Input/output error")) << o.errors[0].message();
  EXPECT_EQ(w.stats().storage_errors, 1u);
  EXPECT_TRUE(is_storage_loss(EIO));
  EXPECT_TRUE(is_storage_loss(ENOENT));
  EXPECT_FALSE(is_storage_loss(ENOSPC));
  EXPECT_FALSE(is_storage_loss(EDQUOT));
  EXPECT_EQ(w.stats().frames_written, 0u);
  EXPECT_EQ(w.stats().write_loss.frames, 10u);
}

ssize_t enospc_write(int, const void*, std::size_t) {
  errno = ENOSPC;
  return -1;
}

// Issue 23, item 12: a header file that fails (a full disk) loses what it still buffered, not
// every header since its last full staging buffer (16384 of them, seconds of a stream): the
// writer loop's flush (every kFlushInterval) has handed the earlier ones to the kernel.
TEST(WriterErrors, AFullDiskLosesOnlyTheHeadersBufferedSinceTheLastFlush) {
  test::TempDir dir;
  CodifHeaderWriter w(test::simple_paths(dir.path()), rotation(0, 1 << 20));
  Bytes expected;
  const auto write_headers = [&](uint32_t first, uint32_t n, bool keep) {
    for (uint32_t i = first; i < first + n; ++i) {
      const Bytes h = test::pattern(64, i);
      (void)w.write_frame(std::span<const std::byte, 64>(h.data(), 64));
      if (keep) test::append(expected, h);
    }
  };
  write_headers(0, 100, true);
  ASSERT_TRUE(w.flush().ok());
  testing::set_write_function(enospc_write);
  write_headers(100, 50, false);
  const Status st = w.flush();
  testing::set_write_function(nullptr);
  EXPECT_EQ(st.code(), ENOSPC) << st.message();
  ASSERT_TRUE(w.close().ok());
  EXPECT_EQ(w.stats().write_loss.frames, 50u);
  EXPECT_EQ(w.stats().write_loss.gaps, (std::vector<std::pair<uint64_t, uint64_t>>{{100, 50}}));
  ASSERT_EQ(w.files().size(), 1u);
  EXPECT_EQ(test::read_file(w.files()[0].path), expected) << "the flushed headers stay";
  EXPECT_EQ(w.files()[0].records, 100u);
}

TEST(WriterErrors, AFileDeletedWhileOpenIsReportedOnce) {
  test::TempDir dir;
  const Stream s;
  RawWriter w(test::simple_paths(dir.path()), rotation(0, 1 << 20));
  (void)write_stream(w, s, 3);
  EXPECT_TRUE(w.check_storage().ok());
  std::filesystem::remove(dir.path() / "f.0");
  const Status st = w.check_storage();
  EXPECT_EQ(st.code(), ENOENT);
  EXPECT_TRUE(contains(st.message(), "was deleted")) << st.message();
  EXPECT_TRUE(w.check_storage().ok()) << "once per file";
  EXPECT_EQ(w.stats().storage_errors, 1u);
}

TEST(WriterErrors, AFileLeftWithoutAWholeFrameIsRemovedNotListed) {
  test::TempDir dir;
  const Stream s;
  constexpr std::size_t kPerFile = 10;
  RawWriter w(test::simple_paths(dir.path()), rotation(kPerFile * s.frame(), 4096));
  Outcome o;
  {
    test::FileSizeLimit limit(s.frame() / 2);  // not even one frame fits in any file
    ASSERT_TRUE(limit.ok());
    o = write_stream(w, s, 25, 0, 200 * kMs);  // retries keep failing
    if (const Status closed = w.close(); !closed.ok()) o.errors.push_back(closed);
  }
  ASSERT_GE(o.errors.size(), 2u);
  EXPECT_EQ(w.stats().write_errors, o.errors.size());
  EXPECT_TRUE(w.files().empty());
  EXPECT_TRUE(std::filesystem::is_empty(dir.path())) << "no empty file is left behind";
  EXPECT_EQ(w.stats().bytes_written, 0u);
  EXPECT_EQ(w.stats().frames_dropped, 25u);
  EXPECT_EQ(w.stats().write_loss.frames, 25u);
}

TEST(WriterErrors, WithoutRotationTheStreamWaitsForTheRetry) {
  test::TempDir dir;
  const Stream s;
  RawWriter w(test::simple_paths(dir.path()), rotation(0, 4096));
  Outcome o;
  {
    test::FileSizeLimit limit(3000);
    ASSERT_TRUE(limit.ok());
    o = write_stream(w, s, 20);
  }
  ASSERT_EQ(o.failed_at.size(), 1u) << "later frames are dropped without an error, and counted";
  ASSERT_EQ(w.files().size(), 1u);
  EXPECT_EQ(w.stats().write_errors, 1u);
  EXPECT_EQ(w.stats().frames_written, 5u);
  EXPECT_EQ(w.stats().frames_dropped, 15u);
  // Fill frames are dropped too, and not counted as written fill frames.
  capture::codif::Header missing;
  missing.data_words = 64;
  EXPECT_TRUE(
      w.write_fill(missing, {.samples_per_frame = 512, .frames_per_period = 10, .period = 1}, 4)
          .ok());
  EXPECT_EQ(w.stats().fill_frames, 0u);
  EXPECT_EQ(w.stats().frames_dropped, 19u);
  EXPECT_EQ(w.stats().write_loss.fills, 4u);
  EXPECT_TRUE(w.close().ok());
}

TEST(WriterErrors, AnExistingFileIsNeverClobberedAndItsNumberIsSkipped) {
  test::TempDir dir;
  const Stream s;
  test::write_text(dir.path() / "f.1", "someone else's data");
  RawWriter w(test::simple_paths(dir.path()), rotation(2 * s.frame(), 4096));
  const Outcome o = write_stream(w, s, 6, 0, 60 * kMs);  // the retry comes at frame 4
  ASSERT_TRUE(w.close().ok());
  ASSERT_EQ(o.failed_at, std::vector<uint32_t>{2});
  EXPECT_EQ(o.errors[0].code(), EEXIST);
  EXPECT_TRUE(contains(o.errors[0].message(), (dir.path() / "f.1").string()));
  const Bytes kept = test::read_file(dir.path() / "f.1");
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(kept.data()), kept.size()),
            "someone else's data");
  ASSERT_EQ(w.files().size(), 2u);
  EXPECT_EQ(w.files()[0].path, dir.path() / "f.0");
  EXPECT_EQ(w.files()[1].path, dir.path() / "f.2");
  EXPECT_EQ(w.stats().frames_dropped, 2u);
  expect_consistent(w, s, 6);
}

TEST(WriterErrors, APathErrorIsReturnedAndCounted) {
  const Stream s;
  RawWriter w(
      [](uint64_t, std::filesystem::path&) { return Status::error(EINVAL, "no name for you"); },
      rotation(0, 4096));
  const Outcome o = write_stream(w, s, 3);
  ASSERT_EQ(o.failed_at, std::vector<uint32_t>{0});
  EXPECT_EQ(o.errors[0].message(), "no name for you");
  EXPECT_EQ(w.stats().write_errors, 1u);
  EXPECT_EQ(w.stats().frames_dropped, 3u);
  EXPECT_TRUE(w.files().empty());
}

TEST(WriterErrors, NoSpaceOnATinyTmpfs) {
  test::TempMount tmpfs("tmpfs", "size=1m");
  if (!tmpfs.ok()) GTEST_SKIP() << tmpfs.why();
  Stream s;
  s.data = 8192;
  constexpr std::size_t kPerFile = 36;  // 297 KB files: the fourth one hits the 1 MiB limit
  constexpr uint32_t kTotal = 200;
  {
    RawWriter w(test::simple_paths(tmpfs.path()), rotation(kPerFile * s.frame(), 64 << 10));
    const Outcome o = write_stream(w, s, kTotal);
    const Status closed = w.close();
    const uint64_t errors = o.errors.size() + (closed.ok() ? 0 : 1);
    ASSERT_GE(errors, 1u);
    EXPECT_EQ(w.stats().write_errors, errors) << "each error returned exactly once";
    EXPECT_EQ(o.errors[0].code(), ENOSPC);
    EXPECT_TRUE(contains(o.errors[0].message(), "No space left on device"))
        << o.errors[0].message();
    EXPECT_TRUE(contains(o.errors[0].message(), (tmpfs.path() / "f.3").string()))
        << o.errors[0].message();
    ASSERT_GE(w.files().size(), 4u);
    for (std::size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(w.files()[i].records, kPerFile);
      EXPECT_FALSE(w.files()[i].failed);
    }
    EXPECT_TRUE(w.files()[3].failed);
    EXPECT_GT(w.files()[3].records, 0u) << "whole frames that reached the disk are kept";
    EXPECT_GT(w.stats().frames_dropped, 0u);
    expect_consistent(w, s, kTotal);
  }
}

}  // namespace
}  // namespace rocecap::writers
