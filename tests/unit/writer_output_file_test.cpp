#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "writer_test_util.hpp"
#include "writers/aligned_buffer.hpp"
#include "writers/output_file.hpp"

namespace rocecap::writers {
namespace {

using test::Bytes;

// Writes records of awkward sizes (crossing the 4 KiB staging buffer in every way) and returns
// the bytes the file must hold.
Bytes write_records(OutputFile& f) {
  Bytes expected;
  const std::size_t sizes[] = {1, 4095, 4096, 4097, 10000, 3, 8192, 777};
  uint32_t seed = 1;
  for (std::size_t n : sizes) {
    const Bytes b = test::pattern(n, seed++);
    EXPECT_TRUE(f.append(b).ok());
    test::append(expected, b);
    EXPECT_TRUE(f.append_zeros(n / 2 + 1).ok());
    expected.resize(expected.size() + n / 2 + 1, std::byte{0});
    f.end_record();
  }
  return expected;
}

TEST(OutputFile, BufferedBytesAreExact) {
  test::TempDir dir;
  AlignedBuffer staging(4096);
  OutputFile f;
  const auto path = dir.path() / "a.bin";
  ASSERT_TRUE(f.open(path, {}, staging.span()).ok());
  const Bytes expected = write_records(f);
  EXPECT_EQ(f.size(), expected.size());
  EXPECT_EQ(f.records(), 8u);
  ASSERT_TRUE(f.close().ok());
  EXPECT_FALSE(f.is_open());
  EXPECT_EQ(test::read_file(path), expected);
}

TEST(OutputFile, NeverClobbersAnExistingFile) {
  test::TempDir dir;
  const auto path = dir.path() / "exists.codif";
  test::write_text(path, "keep me");
  AlignedBuffer staging(4096);
  OutputFile f;
  const Status s = f.open(path, {}, staging.span());
  EXPECT_EQ(s.code(), EEXIST);
  EXPECT_NE(s.message().find(path.string()), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("File exists"), std::string::npos) << s.message();
  EXPECT_FALSE(f.is_open());
  const Bytes kept = test::read_file(path);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(kept.data()), kept.size()), "keep me");
}

TEST(OutputFile, RejectsMisalignedStaging) {
  test::TempDir dir;
  AlignedBuffer staging(8192);
  OutputFile f;
  const Status s = f.open(dir.path() / "x", {}, staging.span().subspan(1, 4096));
  EXPECT_EQ(s.code(), EINVAL);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "x"));
}

TEST(OutputFile, DirectIoWritesIdenticalBytes) {
  // /var/tmp is disk-backed on most hosts; tmpfs refuses O_DIRECT.
  test::TempDir dir(std::filesystem::exists("/var/tmp") ? "/var/tmp" : "/tmp");
  AlignedBuffer staging(4096);
  OutputFile f;
  const auto path = dir.path() / "direct.bin";
  ASSERT_TRUE(f.open(path, {.direct = true}, staging.span()).ok());
  if (!f.direct()) GTEST_SKIP() << "filesystem of " << dir.path() << " refuses O_DIRECT";
  const Bytes expected = write_records(f);
  ASSERT_NE(expected.size() % kDirectAlignment, 0u) << "tail must exercise the padding path";
  ASSERT_TRUE(f.close().ok());
  EXPECT_EQ(test::read_file(path), expected);
  EXPECT_EQ(std::filesystem::file_size(path), expected.size());
}

TEST(OutputFile, DirectFallsBackToBufferedWhereRefused) {
  // ramfs refuses O_DIRECT on every kernel (tmpfs accepts it since Linux 6.6).
  test::TempMount ramfs("ramfs", "");
  if (!ramfs.ok()) GTEST_SKIP() << ramfs.why();
  AlignedBuffer staging(4096);
  OutputFile f;
  const auto path = ramfs.path() / "fallback.bin";
  ASSERT_TRUE(f.open(path, {.direct = true}, staging.span()).ok());
  EXPECT_FALSE(f.direct());
  const Bytes expected = write_records(f);
  ASSERT_TRUE(f.close().ok());
  EXPECT_EQ(test::read_file(path), expected);
}

TEST(OutputFile, WriteErrorLeavesWholeRecordsOnDisk) {
  test::TempDir dir;
  AlignedBuffer staging(4096);
  OutputFile f;
  const auto path = dir.path() / "limited.bin";
  ASSERT_TRUE(f.open(path, {}, staging.span()).ok());
  constexpr std::size_t kRecord = 1500;
  constexpr rlim_t kLimit = 10000;
  Bytes all;
  Status error;
  {
    test::FileSizeLimit limit(kLimit);
    ASSERT_TRUE(limit.ok());
    for (uint32_t i = 0; i < 100 && error.ok(); ++i) {
      const Bytes r = test::pattern(kRecord, i);
      error = f.append(r);
      test::append(all, r);
      if (error.ok()) f.end_record();
    }
  }
  ASSERT_FALSE(error.ok()) << "the size limit never triggered";
  EXPECT_EQ(error.code(), EFBIG);
  EXPECT_NE(error.message().find(path.string()), std::string::npos) << error.message();
  EXPECT_NE(error.message().find("File too large"), std::string::npos) << error.message();
  EXPECT_FALSE(f.is_open());

  const Bytes on_disk = test::read_file(path);
  EXPECT_EQ(on_disk.size(), f.size());
  EXPECT_EQ(on_disk.size() % kRecord, 0u);
  EXPECT_EQ(f.records(), on_disk.size() / kRecord);
  EXPECT_LE(on_disk.size(), kLimit);
  // Records are remembered per 1/64th of the staging buffer: nothing more than that segment and
  // the record cut by the limit may be lost.
  EXPECT_GE(on_disk.size() + kRecord + 4096 / 64, kLimit) << "lost whole records that were on disk";
  EXPECT_TRUE(std::equal(on_disk.begin(), on_disk.end(), all.begin()));
  EXPECT_TRUE(f.close().ok()) << "close after failure is a no-op";
}

}  // namespace
}  // namespace rocecap::writers

namespace rocecap::writers {
namespace {

// A record that ends just past the cut, in the same 1/64th of the buffer, is not whole on disk.
TEST(OutputFile, ARecordEndingJustPastTheCutIsDropped) {
  test::TempDir dir;
  AlignedBuffer staging(4096);  // 64-byte segments
  OutputFile f;
  const auto path = dir.path() / "cut.bin";
  ASSERT_TRUE(f.open(path, {}, staging.span()).ok());
  const std::size_t sizes[] = {1500, 1500, 1500, 1500, 1500, 1500, 1022, 5000};  // ends 9000, 10022
  Bytes all;
  Status error;
  {
    test::FileSizeLimit limit(10000);
    ASSERT_TRUE(limit.ok());
    uint32_t seed = 0;
    for (std::size_t n : sizes) {
      const Bytes r = test::pattern(n, seed++);
      test::append(all, r);
      if (error = f.append(r); !error.ok()) break;
      f.end_record();
    }
  }
  ASSERT_EQ(error.code(), EFBIG);
  const Bytes on_disk = test::read_file(path);
  EXPECT_EQ(on_disk.size(), 9000u);
  EXPECT_EQ(f.size(), 9000u);
  EXPECT_EQ(f.records(), 6u);
  EXPECT_TRUE(std::equal(on_disk.begin(), on_disk.end(), all.begin()));
}

}  // namespace
}  // namespace rocecap::writers
