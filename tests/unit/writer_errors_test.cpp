// Disk errors: every failure is returned once and counted, the broken file keeps only whole,
// intact frames, and the stream resumes at the next rotation point with files still aligned to
// frame numbers. Unprivileged through RLIMIT_FSIZE (EFBIG); a real ENOSPC on a 1 MiB tmpfs when
// running as root.
#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <vector>

#include "writer_test_util.hpp"
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

RotationOptions rotation(uint64_t max_bytes, std::size_t buffer_bytes) {
  RotationOptions o;
  o.max_bytes = max_bytes;
  o.buffer_bytes = buffer_bytes;
  return o;
}

struct Outcome {
  std::vector<uint32_t> failed_at;  // frame numbers whose write returned an error
  std::vector<Status> errors;
};

Outcome write_stream(RawWriter& w, const Stream& s, uint32_t count) {
  Outcome o;
  for (uint32_t i = 0; i < count; ++i) {
    const Bytes h = s.header_of(i), d = s.data_of(i);
    Status st = w.write_frame(std::span<const std::byte, 64>(h.data(), 64), d);
    if (!st.ok()) o.failed_at.push_back(i), o.errors.push_back(std::move(st));
  }
  return o;
}

// What every run must satisfy, errors or not: each file a whole number of frames, holding
// exactly the frames of its time slot, and counters that add up.
void expect_consistent(RawWriter& w, const Stream& s, uint32_t total, std::size_t per_file) {
  uint64_t bytes = 0, frames = 0;
  for (const FileRecord& f : w.files()) {
    SCOPED_TRACE(f.path.string());
    const Bytes on_disk = test::read_file(f.path);
    EXPECT_EQ(on_disk.size(), f.bytes);
    EXPECT_EQ(on_disk.size() % s.frame(), 0u);
    EXPECT_EQ(f.records, on_disk.size() / s.frame());
    EXPECT_EQ(on_disk, s.frames(static_cast<uint32_t>(f.seq * per_file), f.records));
    EXPECT_FALSE(f.open);
    bytes += f.bytes;
    frames += f.records;
  }
  EXPECT_EQ(w.stats().bytes_written, bytes);
  EXPECT_EQ(w.stats().frames_written, frames);
  EXPECT_EQ(w.stats().frames_written + w.stats().frames_dropped, total);
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(WriterErrors, FileTooLargeSuspendsTheStreamUntilTheNextRotation) {
  test::TempDir dir;
  const Stream s;
  constexpr std::size_t kPerFile = 10;
  constexpr rlim_t kLimit = 3000;  // every file breaks after 5 whole frames (2880 bytes)
  RawWriter w(test::simple_paths(dir.path()), rotation(kPerFile * s.frame(), 4096));
  Outcome o;
  {
    test::FileSizeLimit limit(kLimit);
    ASSERT_TRUE(limit.ok());
    o = write_stream(w, s, 25);
    EXPECT_TRUE(w.close().ok()) << "the last file holds 5 frames and fits under the limit";
  }
  // Once per broken file, each from a frame of that file's slot.
  ASSERT_EQ(o.failed_at.size(), 2u);
  EXPECT_LT(o.failed_at[0], 10u);
  EXPECT_GE(o.failed_at[1], 10u);
  EXPECT_LT(o.failed_at[1], 20u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(o.errors[i].code(), EFBIG);
    EXPECT_TRUE(contains(o.errors[i].message(), (dir.path() / ("f." + std::to_string(i))).string()))
        << o.errors[i].message();
    EXPECT_TRUE(contains(o.errors[i].message(), "File too large")) << o.errors[i].message();
  }
  EXPECT_EQ(w.stats().write_errors, 2u);
  EXPECT_EQ(w.stats().last_error, o.errors[1].message());
  EXPECT_EQ(w.stats().files_opened, 3u);

  const auto& files = w.files();
  ASSERT_EQ(files.size(), 3u);
  EXPECT_TRUE(files[0].failed);
  EXPECT_TRUE(files[1].failed);
  EXPECT_FALSE(files[2].failed);
  for (const FileRecord& f : files)
    EXPECT_EQ(f.records, 5u) << f.path;
  expect_consistent(w, s, 25, kPerFile);
  EXPECT_EQ(w.stats().frames_dropped, 10u);
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
    o = write_stream(w, s, 25);
    if (const Status closed = w.close(); !closed.ok()) o.errors.push_back(closed);
  }
  ASSERT_EQ(o.errors.size(), 3u) << "one error per file slot (the last one at close)";
  EXPECT_EQ(w.stats().write_errors, 3u);
  EXPECT_TRUE(w.files().empty());
  EXPECT_TRUE(std::filesystem::is_empty(dir.path())) << "no empty file is left behind";
  EXPECT_EQ(w.stats().bytes_written, 0u);
  EXPECT_EQ(w.stats().frames_dropped, 25u);
}

TEST(WriterErrors, WithoutRotationTheStreamStopsAfterAnError) {
  test::TempDir dir;
  const Stream s;
  RawWriter w(test::simple_paths(dir.path()), rotation(0, 4096));
  Outcome o;
  {
    test::FileSizeLimit limit(3000);
    ASSERT_TRUE(limit.ok());
    o = write_stream(w, s, 20);
  }
  ASSERT_EQ(o.failed_at.size(), 1u) << "later frames are dropped silently, and counted";
  ASSERT_EQ(w.files().size(), 1u);
  EXPECT_EQ(w.stats().write_errors, 1u);
  EXPECT_EQ(w.stats().frames_written, 5u);
  EXPECT_EQ(w.stats().frames_dropped, 15u);
  // Fill frames are dropped too, and not counted as written fill frames.
  codif::Header missing;
  missing.data_words = 64;
  EXPECT_TRUE(
      w.write_fill(missing, {.samples_per_frame = 512, .frames_per_period = 10, .period = 1}, 4)
          .ok());
  EXPECT_EQ(w.stats().fill_frames, 0u);
  EXPECT_EQ(w.stats().frames_dropped, 19u);
  EXPECT_TRUE(w.close().ok());
  expect_consistent(w, s, 24, 0);
}

TEST(WriterErrors, AnExistingFileIsNeverClobberedAndItsSlotIsSkipped) {
  test::TempDir dir;
  const Stream s;
  test::write_text(dir.path() / "f.1", "someone else's data");
  RawWriter w(test::simple_paths(dir.path()), rotation(2 * s.frame(), 4096));
  const Outcome o = write_stream(w, s, 6);
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
  expect_consistent(w, s, 6, 2);
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
    expect_consistent(w, s, kTotal, kPerFile);
  }
}

}  // namespace
}  // namespace rocecap::writers
