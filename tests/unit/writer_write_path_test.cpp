// How bytes reach the files (issue 12 "parallel, asynchronous writes", issue 17 "no staging
// copy"): writev straight from the caller's memory, O_DIRECT through io_uring with several
// writes in flight, the write() fallback, preallocation. Every path must produce the bytes the
// copy + write() path produces, and keep the write-error guarantees (whole records on disk).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "writer_test_util.hpp"
#include "writers/aligned_buffer.hpp"
#include "writers/output_file.hpp"
#include "writers/raw_writer.hpp"
#include "writers/uring_queue.hpp"

namespace rocecap::writers {
namespace {

using test::Bytes;

// Sets (or unsets) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_.c_str(), old_.c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }

 private:
  std::string name_, old_;
  bool had_ = false;
};

// Records of awkward sizes around the 16 KiB staging buffer, through append (copied),
// append_borrowed (written from `src` where the path gathers) and append_zeros, with
// flush_borrowed now and then as the ring consumer does before releasing slots.
Bytes write_mixed(OutputFile& f, const Bytes& src) {
  Bytes expected;
  const std::size_t sizes[] = {1, 64, 8298, 100, 5000, 70000, 3, 4096, 255, 256, 257, 16384};
  std::size_t at = 0;
  for (int r = 0; r < 48; ++r) {
    const std::size_t n = sizes[r % 12];
    if (at + n > src.size()) at = 0;
    const std::span<const std::byte> piece(src.data() + at, n);
    EXPECT_TRUE((r % 3 == 0 ? f.append(piece) : f.append_borrowed(piece)).ok());
    test::append(expected, piece);
    at += n;
    if (r % 5 == 0) {
      EXPECT_TRUE(f.append_zeros(100000 + r).ok());
      expected.resize(expected.size() + 100000 + r, std::byte{0});
    }
    f.end_record();
    if (r % 7 == 0) {
      EXPECT_TRUE(f.flush_borrowed().ok());
    }
  }
  return expected;
}

std::filesystem::path disk_dir() {
  // /var/tmp is disk-backed on most hosts (O_DIRECT, fallocate); /tmp may be tmpfs.
  return std::filesystem::exists("/var/tmp") ? "/var/tmp" : "/tmp";
}

TEST(WritePath, GatherWritesTheSameBytesAsTheCopyPath) {
  test::TempDir dir;
  const Bytes src = test::pattern(300000, 7);
  AlignedBuffer staging(16384);
  OutputFile copy, gather;
  ASSERT_TRUE(copy.open(dir.path() / "copy", {}, staging.span()).ok());
  const Bytes expected = write_mixed(copy, src);
  ASSERT_TRUE(copy.close().ok());
  ASSERT_TRUE(gather.open(dir.path() / "gather", {.gather = true}, staging.span()).ok());
  EXPECT_EQ(gather.write_path(), WritePath::gather_writev);
  EXPECT_EQ(write_mixed(gather, src), expected);
  EXPECT_EQ(gather.size(), expected.size());
  EXPECT_EQ(gather.records(), 48u);
  ASSERT_TRUE(gather.close().ok());
  EXPECT_EQ(test::read_file(dir.path() / "copy"), expected);
  EXPECT_EQ(test::read_file(dir.path() / "gather"), expected);
}

// The proof that no staging copy is made: bytes changed after append_borrowed and before
// flush_borrowed are the bytes in the file (a copy would have kept the old ones); bytes
// changed after flush_borrowed are not.
TEST(WritePath, BorrowedBytesAreWrittenFromWhereTheyAre) {
  test::TempDir dir;
  AlignedBuffer staging(16384);
  OutputFile f;
  ASSERT_TRUE(f.open(dir.path() / "g", {.gather = true}, staging.span()).ok());
  Bytes slot(8298, std::byte{0x11});
  ASSERT_TRUE(f.append_borrowed(slot).ok());
  f.end_record();
  std::fill(slot.begin(), slot.end(), std::byte{0x22});  // before the flush: written
  ASSERT_TRUE(f.flush_borrowed().ok());
  std::fill(slot.begin(), slot.end(), std::byte{0x33});  // after: not
  ASSERT_TRUE(f.close().ok());
  EXPECT_EQ(test::read_file(dir.path() / "g"), Bytes(8298, std::byte{0x22}));
}

TEST(WritePath, SmallBorrowedPiecesAreCopied) {
  test::TempDir dir;
  AlignedBuffer staging(16384);
  OutputFile f;
  ASSERT_TRUE(f.open(dir.path() / "g", {.gather = true}, staging.span()).ok());
  Bytes header(16, std::byte{0x44});  // a pcap record header built on the caller's stack
  ASSERT_TRUE(f.append_borrowed(header).ok());
  std::fill(header.begin(), header.end(), std::byte{0x55});
  ASSERT_TRUE(f.close().ok());
  EXPECT_EQ(test::read_file(dir.path() / "g"), Bytes(16, std::byte{0x44}));
}

TEST(WritePath, DirectThroughIoUringWritesTheSameBytes) {
  test::TempDir dir(disk_dir());
  std::string why;
  auto queue = UringQueue::create(4, why);
  if (!queue) GTEST_SKIP() << "no io_uring here: " << why;
  const Bytes src = test::pattern(300000, 9);
  AlignedBuffer staging(16384);
  OutputFile f;
  ASSERT_TRUE(f.open(dir.path() / "u", {.direct = true}, staging.span(), queue.get()).ok());
  if (!f.direct()) GTEST_SKIP() << "filesystem of " << dir.path() << " refuses O_DIRECT";
  EXPECT_EQ(f.write_path(), WritePath::copy_uring);
  const Bytes expected = write_mixed(f, src);
  ASSERT_NE(expected.size() % kDirectAlignment, 0u) << "the tail must be padded and cut";
  ASSERT_TRUE(f.close().ok());
  EXPECT_EQ(test::read_file(dir.path() / "u"), expected);
  EXPECT_EQ(queue->in_flight(), 0u);
}

TEST(WritePath, IoUringForcedOffFallsBackToWriteWithTheReason) {
  ScopedEnv off("ROCECAP_IO_URING", "off");
  std::string why;
  EXPECT_EQ(UringQueue::create(4, why), nullptr);
  EXPECT_NE(why.find("ROCECAP_IO_URING=off"), std::string::npos) << why;

  test::TempDir dir(disk_dir());
  RotationOptions r;
  r.buffer_bytes = 16384;
  r.output.direct = true;
  RawWriter w(test::simple_paths(dir.path()), r);
  std::array<std::byte, 64> header{};
  const Bytes data = test::pattern(8234, 3);
  ASSERT_TRUE(w.write_frame(header, data).ok());
  ASSERT_TRUE(w.close().ok());
  EXPECT_NE(w.output().io_engine().find("forced off"), std::string::npos) << w.output().io_engine();
  EXPECT_EQ(w.output().write_path(), WritePath::copy_write);
  Bytes expected(header.begin(), header.end());
  test::append(expected, data);
  EXPECT_EQ(test::read_file(w.files().at(0).path), expected);
}

// ENOSPC arriving as an io_uring completion (or a short write) leaves whole records, like the
// write() path does.
TEST(WritePath, IoUringFullDiskLeavesWholeRecords) {
  test::TempMount tmpfs("tmpfs", "size=3m");
  if (!tmpfs.ok()) GTEST_SKIP() << tmpfs.why();
  std::string why;
  auto queue = UringQueue::create(4, why);
  if (!queue) GTEST_SKIP() << "no io_uring here: " << why;
  AlignedBuffer staging(1 << 20);
  OutputFile f;
  ASSERT_TRUE(f.open(tmpfs.path() / "full", {.direct = true}, staging.span(), queue.get()).ok());
  if (!f.direct()) GTEST_SKIP() << "tmpfs refuses O_DIRECT before Linux 6.6";
  Bytes record(8298);
  Status error;
  uint32_t written = 0;
  for (uint32_t i = 0; i < 1000 && error.ok(); ++i) {
    record = test::pattern(8298, i);
    if (error = f.append(record); error.ok()) f.end_record(), ++written;
  }
  ASSERT_FALSE(error.ok()) << "3 MiB never filled";
  EXPECT_EQ(error.code(), ENOSPC) << error.message();
  EXPECT_FALSE(f.is_open());
  const Bytes on_disk = test::read_file(tmpfs.path() / "full");
  EXPECT_EQ(on_disk.size(), f.size());
  EXPECT_EQ(on_disk.size() % 8298, 0u);
  EXPECT_EQ(f.records(), on_disk.size() / 8298);
  EXPECT_GT(f.records(), 300u) << "whole records that reached the disk are kept";
  for (uint64_t i = 0; i < f.records(); ++i) {
    ASSERT_TRUE(std::equal(on_disk.begin() + i * 8298, on_disk.begin() + (i + 1) * 8298,
                           test::pattern(8298, static_cast<uint32_t>(i)).begin()))
        << "record " << i;
  }
  EXPECT_EQ(queue->in_flight(), 0u);
}

TEST(WritePath, GatherWriteErrorLeavesWholeRecords) {
  test::TempDir dir;
  AlignedBuffer staging(16384);
  OutputFile f;
  ASSERT_TRUE(f.open(dir.path() / "limited", {.gather = true}, staging.span()).ok());
  constexpr std::size_t kRecord = 1500;
  Bytes all;
  Status error;
  {
    test::FileSizeLimit limit(100000);
    ASSERT_TRUE(limit.ok());
    std::vector<Bytes> live;  // borrowed bytes stay valid until the flush
    live.reserve(200);
    for (uint32_t i = 0; i < 200 && error.ok(); ++i) {
      live.push_back(test::pattern(kRecord, i));
      test::append(all, live.back());
      if (error = f.append_borrowed(live.back()); error.ok()) f.end_record();
      if (error.ok() && i % 10 == 9) error = f.flush_borrowed();
    }
  }
  ASSERT_EQ(error.code(), EFBIG) << error.message();
  const Bytes on_disk = test::read_file(dir.path() / "limited");
  EXPECT_EQ(on_disk.size(), f.size());
  EXPECT_EQ(on_disk.size() % kRecord, 0u);
  EXPECT_GE(on_disk.size() + kRecord + 16384 / 64, 100000u) << "lost records that were on disk";
  EXPECT_TRUE(std::equal(on_disk.begin(), on_disk.end(), all.begin()));
}

TEST(WritePath, PreallocationIsReleasedAtClose) {
  test::TempDir dir(disk_dir());
  if (test::is_tmpfs(dir.path())) GTEST_SKIP() << dir.path() << " is tmpfs: not preallocated";
  AlignedBuffer staging(16384);
  OutputFile f;
  const auto path = dir.path() / "p";
  ASSERT_TRUE(f.open(path, {.preallocate = 64 << 20}, staging.span()).ok());
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  if (st.st_blocks * 512 < (64 << 20)) GTEST_SKIP() << "the filesystem does not preallocate";
  EXPECT_EQ(st.st_size, 0) << "KEEP_SIZE: the size stays the real size";
  const Bytes data = test::pattern(100000, 1);
  ASSERT_TRUE(f.append(data).ok());
  f.end_record();
  ASSERT_TRUE(f.close().ok());
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 100000);
  EXPECT_LT(st.st_blocks * 512, 1 << 20) << "the unused reservation was not given back";
  EXPECT_EQ(test::read_file(path), data);
}

// A rotation-sized limit (here 1 GiB) is reserved a step at a time ahead of the writes, not at
// open: every file of every stream is open at once, and 1 GiB each filled the disk.
TEST(WritePath, PreallocationGrowsAStepAheadOfTheWrites) {
  test::TempDir dir(disk_dir());
  if (test::is_tmpfs(dir.path())) GTEST_SKIP() << dir.path() << " is tmpfs: not preallocated";
  AlignedBuffer staging(1 << 20);
  OutputFile f;
  const auto path = dir.path() / "p";
  ASSERT_TRUE(f.open(path, {.preallocate = uint64_t{1} << 30}, staging.span()).ok());
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  if (uint64_t(st.st_blocks) * 512 < kPreallocateStep)
    GTEST_SKIP() << "the filesystem does not preallocate";
  EXPECT_EQ(uint64_t(st.st_blocks) * 512, kPreallocateStep) << "more than one step at open";
  const Bytes data = test::pattern(1 << 20, 2);
  for (int i = 0; i < 70; ++i) {  // 70 MiB: past the first step
    ASSERT_TRUE(f.append(data).ok());
    f.end_record();
  }
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_GE(uint64_t(st.st_blocks) * 512, 2 * kPreallocateStep) << "the reservation did not grow";
  EXPECT_LT(uint64_t(st.st_blocks) * 512, 3 * kPreallocateStep);
  ASSERT_TRUE(f.close().ok());
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 70 << 20);
  EXPECT_LT(uint64_t(st.st_blocks) * 512, (70u << 20) + (1u << 20));
}

// The "disk" takes `g_room` bytes and then answers EIO (test seam; the real write() below it).
std::size_t g_room = 0;
ssize_t limited_write(int fd, const void* data, std::size_t n) {
  if (g_room == 0) return errno = EIO, -1;
  const ssize_t w = ::write(fd, data, std::min(n, g_room));
  if (w > 0) g_room -= static_cast<std::size_t>(w);
  return w;
}

// A write error in a preallocated file: the cut to the last whole record is final (the
// reservation is not given back by truncating to the old end, which would append zeros).
TEST(WritePath, AWriteErrorInAPreallocatedFileLeavesWholeRecords) {
  test::TempDir dir(disk_dir());
  AlignedBuffer staging(16384);
  OutputFile f;
  const auto path = dir.path() / "p";
  ASSERT_TRUE(f.open(path, {.preallocate = 8 << 20}, staging.span()).ok());
  constexpr std::size_t kRecord = 1500;
  g_room = 40000;
  testing::set_write_function(limited_write);
  Status error;
  Bytes all;
  for (uint32_t i = 0; i < 100 && error.ok(); ++i) {
    const Bytes r = test::pattern(kRecord, i);
    test::append(all, r);
    if (error = f.append(r); error.ok()) f.end_record();
  }
  testing::set_write_function(nullptr);
  ASSERT_EQ(error.code(), EIO) << error.message();
  const Bytes on_disk = test::read_file(path);
  EXPECT_EQ(on_disk.size(), f.size());
  EXPECT_EQ(on_disk.size() % kRecord, 0u);
  EXPECT_LE(on_disk.size(), 40000u);
  EXPECT_TRUE(std::equal(on_disk.begin(), on_disk.end(), all.begin()));
}

// The rotating writer with borrowed payloads: fill frames (zeros written from a static page)
// and rotation give the files of the copy path.
TEST(WritePath, BorrowingRawWriterMatchesTheCopyingOne) {
  test::TempDir dir;
  RotationOptions r;
  r.buffer_bytes = 16384;
  r.max_bytes = 50000;
  RawWriter copy(test::simple_paths(dir.path(), "c"), r);
  RawWriter borrow(test::simple_paths(dir.path(), "b"), r);
  borrow.borrow_payloads();
  std::array<std::byte, 64> header{};
  for (uint32_t i = 0; i < 40; ++i) {
    header[0] = static_cast<std::byte>(i);
    const Bytes data = test::pattern(8234, i);
    ASSERT_TRUE(copy.write_frame(header, {data.data(), 1000}, {data.data() + 1000, 7234}).ok());
    ASSERT_TRUE(borrow.write_frame(header, {data.data(), 1000}, {data.data() + 1000, 7234}).ok());
    ASSERT_TRUE(borrow.flush_borrowed().ok());  // `data` dies here
  }
  ASSERT_TRUE(copy.close().ok());
  ASSERT_TRUE(borrow.close().ok());
  EXPECT_EQ(borrow.output().write_path(), WritePath::gather_writev);
  ASSERT_EQ(copy.files().size(), borrow.files().size());
  ASSERT_GT(copy.files().size(), 1u);
  for (std::size_t i = 0; i < copy.files().size(); ++i) {
    EXPECT_EQ(test::read_file(copy.files()[i].path), test::read_file(borrow.files()[i].path)) << i;
  }
  EXPECT_EQ(copy.stats().bytes_written, borrow.stats().bytes_written);
}

// Flush (issue 23, item 12): what a file buffers goes to the kernel when the writer loop asks
// (CaptureWriter::flush, every kFlushInterval), short of a full staging buffer, so that a
// SIGKILL loses at most that interval. On every path; an O_DIRECT file writes its whole blocks
// and keeps the partial one for later. The file's final bytes are those of a file never flushed.
TEST(WritePath, FlushHandsWhatIsBufferedToTheKernelOnEveryPath) {
  test::TempDir dir(disk_dir());
  std::string why;
  auto queue = UringQueue::create(4, why);
  struct Case {
    const char* name;
    OutputOptions options;
    bool uring;
  };
  const Case cases[] = {{"copy+write", {}, false},
                        {"writev", {.gather = true}, false},
                        {"direct-write", {.direct = true}, false},
                        {"direct-io_uring", {.direct = true}, true}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    if (c.uring && !queue) continue;  // no io_uring here: direct-write covers O_DIRECT
    AlignedBuffer staging(65536);
    OutputFile f;
    const auto path = dir.path() / c.name;
    ASSERT_TRUE(f.open(path, c.options, staging.span(), c.uring ? queue.get() : nullptr).ok());
    // An io_uring write completes after flush() returns: its size is waited for (2 s at most).
    const auto size_once = [&path](uint64_t want) {
      for (int i = 0; i < 200 && std::filesystem::file_size(path) < want; ++i)
        ::usleep(10000);
      return std::filesystem::file_size(path);
    };
    Bytes expected;
    for (uint32_t round = 0; round < 3; ++round) {
      for (uint32_t i = 0; i < 23; ++i) {  // 23 x 300 bytes: under one buffer, not whole blocks
        const Bytes header = test::pattern(300, round * 100 + i);
        ASSERT_TRUE(f.append(header).ok());
        f.end_record();
        test::append(expected, header);
      }
      ASSERT_TRUE(f.flush().ok());
      const uint64_t want =
          f.direct() ? expected.size() / kDirectAlignment * kDirectAlignment : expected.size();
      EXPECT_EQ(size_once(want), want) << "round " << round;
    }
    ASSERT_TRUE(f.close().ok());
    EXPECT_EQ(test::read_file(path), expected);
  }
}

}  // namespace
}  // namespace rocecap::writers
