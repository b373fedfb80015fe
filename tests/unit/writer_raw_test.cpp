// Raw and codifhdr output: byte-exact files against bytes built here independently (headers
// filled in field by field and encoded, payloads from a pattern, fill data zero), and rotation.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "capture/codif/header.hpp"
#include "writer_test_util.hpp"
#include "writers/codif_header_writer.hpp"
#include "writers/output_path.hpp"
#include "writers/raw_writer.hpp"

namespace rocecap::writers {
namespace {

using test::Bytes;

// Designated initializers that leave members out trip -Wmissing-field-initializers on g++ 12.
RotationOptions rotation(uint64_t max_bytes, std::size_t buffer_bytes = 8u << 20,
                         uint64_t first_seq = 0) {
  RotationOptions o;
  o.max_bytes = max_bytes;
  o.buffer_bytes = buffer_bytes;
  o.first_seq = first_seq;
  return o;
}

constexpr std::size_t kData = 512;  // 64 words of 8 bytes
constexpr std::size_t kFrame = kData + capture::codif::kHeaderBytes;
// 8-bit real samples, one channel: 512 samples per frame, 10 frames per 1-second period.
constexpr capture::codif::Timing kTiming{
    .samples_per_frame = 512, .frames_per_period = 10, .period = 1};

capture::codif::Header header_at(uint32_t seconds, uint32_t frame, bool invalid = false) {
  capture::codif::Header h;
  h.layout = capture::codif::Layout::v3;
  h.sync = capture::codif::kSyncV3;
  h.version = 3;
  h.seconds = seconds;
  h.frame = frame;
  h.epoch = 52;
  h.nbits = 8;
  h.nchan = 1;
  h.period = 1;
  h.station_id = capture::codif::station_id('A', 'K');
  h.thread_id = 1;
  h.group_id = 2;
  h.data_words = kData / 8;
  h.total_samples = 5120;
  h.invalid = invalid;
  return h;
}

struct Received {
  uint32_t seconds, frame;
};

// The sequence the tests write: frames 1000.8, fill 1000.9 .. 1001.1 (across the period
// boundary), 1001.2, fill 1001.3, 1001.4.
struct Expected {
  Bytes raw, stripped, headers;
};

Bytes data_of(uint32_t seconds, uint32_t frame) {
  return test::pattern(kData, seconds * 16 + frame);
}

void expect_frame(Expected& e, uint32_t seconds, uint32_t frame, bool fill) {
  const auto h = test::encoded(header_at(seconds, frame, fill));
  const Bytes data = fill ? Bytes(kData, std::byte{0}) : data_of(seconds, frame);
  test::append(e.raw, h);
  test::append(e.raw, data);
  test::append(e.stripped, data);
  test::append(e.headers, h);
}

Expected expected_sequence() {
  Expected e;
  expect_frame(e, 1000, 8, false);
  expect_frame(e, 1000, 9, true);
  expect_frame(e, 1001, 0, true);
  expect_frame(e, 1001, 1, true);
  expect_frame(e, 1001, 2, false);
  expect_frame(e, 1001, 3, true);
  expect_frame(e, 1001, 4, false);
  return e;
}

template <typename Writer, typename WriteFrame>
void write_sequence(Writer& w, WriteFrame write_frame) {
  auto received = [&](uint32_t s, uint32_t f) {
    const auto h = test::encoded(header_at(s, f));
    const Bytes data = data_of(s, f);
    ASSERT_TRUE(
        write_frame(std::span<const std::byte, capture::codif::kHeaderBytes>(h), data).ok());
  };
  received(1000, 8);
  ASSERT_TRUE(w.write_fill(header_at(1000, 9), kTiming, 3).ok());
  received(1001, 2);
  ASSERT_TRUE(w.write_fill(header_at(1001, 3), kTiming, 1).ok());
  received(1001, 4);
}

void write_raw_sequence(RawWriter& w) {
  write_sequence(w, [&](std::span<const std::byte, capture::codif::kHeaderBytes> h,
                        const Bytes& d) { return w.write_frame(h, d); });
}

TEST(RawWriter, FixtureMatchesTheCodec) {
  capture::codif::Timing t;
  ASSERT_EQ(capture::codif::validate(header_at(1000, 8), kFrame, t), capture::codif::Invalid::ok);
  EXPECT_EQ(t.samples_per_frame, kTiming.samples_per_frame);
  EXPECT_EQ(t.frames_per_period, kTiming.frames_per_period);
  EXPECT_EQ(t.period, kTiming.period);
}

TEST(RawWriter, FramesAndFillFramesAreByteExact) {
  test::TempDir dir;
  RawWriter w(test::simple_paths(dir.path()), rotation(0, 4096));
  write_raw_sequence(w);
  ASSERT_TRUE(w.close().ok());

  const Expected e = expected_sequence();
  EXPECT_EQ(test::read_file(dir.path() / "f.0"), e.raw);
  EXPECT_EQ(w.stats().frames_written, 7u);
  EXPECT_EQ(w.stats().fill_frames, 4u);
  EXPECT_EQ(w.stats().bytes_written, 7 * kFrame);
  EXPECT_EQ(w.stats().files_opened, 1u);
  EXPECT_EQ(w.stats().write_errors, 0u);
  EXPECT_EQ(w.stats().frames_dropped, 0u);
  EXPECT_EQ(w.stats().last_error, "");
  ASSERT_EQ(w.files().size(), 1u);
  EXPECT_EQ(w.files()[0].path, dir.path() / "f.0");
  EXPECT_EQ(w.files()[0].bytes, 7 * kFrame);
  EXPECT_EQ(w.files()[0].records, 7u);
  EXPECT_FALSE(w.files()[0].open);
  EXPECT_FALSE(w.files()[0].failed);
}

TEST(RawWriter, FillFramesDecodeAsInvalidWithAdvancedTime) {
  test::TempDir dir;
  RawWriter w(test::simple_paths(dir.path()), {});
  write_raw_sequence(w);
  ASSERT_TRUE(w.close().ok());
  const Bytes file = test::read_file(dir.path() / "f.0");
  ASSERT_EQ(file.size(), 7 * kFrame);
  const uint32_t want_seconds[] = {1000, 1000, 1001, 1001, 1001, 1001, 1001};
  const uint32_t want_frame[] = {8, 9, 0, 1, 2, 3, 4};
  const bool want_invalid[] = {false, true, true, true, false, true, false};
  for (std::size_t i = 0; i < 7; ++i) {
    capture::codif::Header h;
    ASSERT_TRUE(capture::codif::decode(std::span(file).subspan(i * kFrame, kFrame),
                                       capture::codif::SyncSet::defaults(), h));
    EXPECT_EQ(h.seconds, want_seconds[i]) << i;
    EXPECT_EQ(h.frame, want_frame[i]) << i;
    EXPECT_EQ(h.invalid, want_invalid[i]) << i;
  }
}

TEST(RawWriter, StripHeadersWritesDataOnly) {
  test::TempDir dir;
  RawWriter w(test::simple_paths(dir.path()), rotation(0, 4096), {.strip_headers = true});
  write_raw_sequence(w);
  ASSERT_TRUE(w.close().ok());
  EXPECT_EQ(test::read_file(dir.path() / "f.0"), expected_sequence().stripped);
  EXPECT_EQ(w.stats().bytes_written, 7 * kData);
  EXPECT_EQ(w.stats().fill_frames, 4u);
}

TEST(CodifHeaderWriter, WritesHeadersIncludingFillHeaders) {
  test::TempDir dir;
  CodifHeaderWriter w(test::simple_paths(dir.path()), {});
  write_sequence(w, [&](std::span<const std::byte, capture::codif::kHeaderBytes> h, const Bytes&) {
    return w.write_frame(h);
  });
  ASSERT_TRUE(w.close().ok());
  EXPECT_EQ(test::read_file(dir.path() / "f.0"), expected_sequence().headers);
  EXPECT_EQ(w.stats().frames_written, 7u);
  EXPECT_EQ(w.stats().fill_frames, 4u);
  EXPECT_EQ(w.stats().bytes_written, 7 * capture::codif::kHeaderBytes);
}

// Writes frames 1000.0 .. 1000.(n-1) and returns the expected concatenation.
Bytes write_frames(RawWriter& w, uint32_t n) {
  Bytes all;
  for (uint32_t f = 0; f < n; ++f) {
    const auto h = test::encoded(header_at(1000, f));
    const Bytes d = data_of(1000, f);
    EXPECT_TRUE(w.write_frame(h, d).ok());
    test::append(all, h);
    test::append(all, d);
  }
  return all;
}

Bytes slice(const Bytes& b, std::size_t first_frame, std::size_t frames) {
  return Bytes(b.begin() + static_cast<std::ptrdiff_t>(first_frame * kFrame),
               b.begin() + static_cast<std::ptrdiff_t>((first_frame + frames) * kFrame));
}

TEST(RotatingFile, RotatesAtFrameBoundariesWithExactFileList) {
  test::TempDir dir;
  RawWriter w(test::simple_paths(dir.path()), rotation(3 * kFrame + 100, 4096, 1));
  const Bytes all = write_frames(w, 8);
  ASSERT_TRUE(w.close().ok());

  const auto& files = w.files();
  ASSERT_EQ(files.size(), 3u);
  const std::size_t frames[] = {3, 3, 2};
  std::size_t first = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(files[i].path, dir.path() / ("f." + std::to_string(i + 1)));
    EXPECT_EQ(files[i].seq, i + 1);
    EXPECT_EQ(files[i].bytes, frames[i] * kFrame);
    EXPECT_EQ(files[i].records, frames[i]);
    EXPECT_EQ(std::filesystem::file_size(files[i].path), frames[i] * kFrame);
    EXPECT_EQ(test::read_file(files[i].path), slice(all, first, frames[i])) << i;
    first += frames[i];
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "f.0"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "f.4"));
  EXPECT_EQ(w.stats().files_opened, 3u);
  EXPECT_EQ(w.stats().bytes_written, 8 * kFrame);
}

TEST(RotatingFile, FillsAFileToExactlyMaxBytes) {
  test::TempDir dir;
  RawWriter w(test::simple_paths(dir.path()), rotation(4 * kFrame));
  const Bytes all = write_frames(w, 9);
  ASSERT_TRUE(w.close().ok());
  ASSERT_EQ(w.files().size(), 3u);
  EXPECT_EQ(w.files()[0].bytes, 4 * kFrame);
  EXPECT_EQ(w.files()[1].bytes, 4 * kFrame);
  EXPECT_EQ(w.files()[2].bytes, 1 * kFrame);
  EXPECT_EQ(test::read_file(w.files()[2].path), slice(all, 8, 1));
}

TEST(RotatingFile, AFrameLargerThanMaxBytesSitsAloneInItsFile) {
  test::TempDir dir;
  RawWriter w(test::simple_paths(dir.path()), rotation(100));
  const Bytes all = write_frames(w, 3);
  ASSERT_TRUE(w.close().ok());
  ASSERT_EQ(w.files().size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(w.files()[i].bytes, kFrame);
    EXPECT_EQ(test::read_file(w.files()[i].path), slice(all, i, 1));
  }
}

TEST(RotatingFile, OpenFileSizeIsLiveAndNoFileBeforeTheFirstFrame) {
  test::TempDir dir;
  RawWriter w(test::simple_paths(dir.path()), {});
  EXPECT_TRUE(w.files().empty());
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "f.0"));
  write_frames(w, 2);
  ASSERT_EQ(w.files().size(), 1u);
  EXPECT_TRUE(w.files()[0].open);
  EXPECT_EQ(w.files()[0].bytes, 2 * kFrame);
  EXPECT_EQ(w.files()[0].records, 2u);
}

TEST(RawWriter, MovesWithItsOpenFile) {
  test::TempDir dir;
  std::vector<RawWriter> writers;
  writers.reserve(1);
  writers.emplace_back(test::simple_paths(dir.path(), "a"), rotation(0, 4096));
  const Bytes first = write_frames(writers[0], 9);  // 5184 bytes: one buffer flushed, rest staged
  writers.emplace_back(test::simple_paths(dir.path(), "b"), rotation(0, 4096));  // reallocates
  Bytes all = first;
  test::append(all, write_frames(writers[0], 3));
  for (RawWriter& w : writers)
    ASSERT_TRUE(w.close().ok());
  EXPECT_EQ(test::read_file(dir.path() / "a.0"), all);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "b.0"));
}

TEST(RawWriter, CloseIsFinal) {
  test::TempDir dir;
  RawWriter w(test::simple_paths(dir.path()), rotation(kFrame));
  const Bytes all = write_frames(w, 2);
  ASSERT_TRUE(w.close().ok());
  const auto h = test::encoded(header_at(1000, 2));
  EXPECT_TRUE(w.write_frame(h, data_of(1000, 2)).ok());
  EXPECT_EQ(w.stats().frames_dropped, 1u);
  EXPECT_EQ(w.files().size(), 2u);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "f.2"));
}

TEST(RawWriter, NamesFilesThroughItsPathMaker) {
  test::TempDir dir;
  const PathMaker paths = [&](uint64_t seq, std::filesystem::path& out) {
    return place_in_directory(
        dir.path(),
        "run7/239.17.0.1_ak01." + std::string(4 - 1, '0') + std::to_string(seq) + ".codif", out);
  };
  RawWriter w(paths, rotation(2 * kFrame));
  const Bytes all = write_frames(w, 3);
  ASSERT_TRUE(w.close().ok());
  const auto first = dir.path() / "run7" / "239.17.0.1_ak01.0000.codif";
  const auto second = dir.path() / "run7" / "239.17.0.1_ak01.0001.codif";
  EXPECT_EQ(test::read_file(first), slice(all, 0, 2));
  EXPECT_EQ(test::read_file(second), slice(all, 2, 1));
}

}  // namespace
}  // namespace rocecap::writers

namespace rocecap::writers {
namespace {

// The split capture hands a frame's data in two pieces (end of the header slot, payload slot):
// the file must hold the same bytes as for one contiguous piece, with and without headers.
TEST(RawWriter, DataInTwoPiecesWritesTheSameBytesAsOne) {
  for (const bool strip : {false, true}) {
    test::TempDir dir;
    RawOptions opts;
    opts.strip_headers = strip;
    RawWriter one(test::simple_paths(dir.path(), "one"), rotation(0), opts);
    RawWriter two(test::simple_paths(dir.path(), "two"), rotation(0), opts);
    for (uint32_t f = 0; f < 3; ++f) {
      const auto h = test::encoded(header_at(1000, f));
      const Bytes d = data_of(1000, f);
      ASSERT_TRUE(one.write_frame(h, d).ok());
      const std::span<const std::byte> all(d);
      ASSERT_TRUE(two.write_frame(h, all.first(22), all.subspan(22)).ok());
    }
    ASSERT_TRUE(one.close().ok());
    ASSERT_TRUE(two.close().ok());
    const Bytes a = test::read_file(one.files().at(0).path);
    EXPECT_EQ(a.size(), 3 * (strip ? kData : kFrame));
    EXPECT_EQ(a, test::read_file(two.files().at(0).path)) << "strip=" << strip;
  }
}

}  // namespace
}  // namespace rocecap::writers

namespace rocecap::writers {
namespace {

// SIGHUP: the next record opens the next file; a request on an empty file opens nothing new.
TEST(RotatingFile, RequestedRotationStartsTheNextFileAtTheNextRecord) {
  test::TempDir dir;
  RawWriter w(test::simple_paths(dir.path()), rotation(0));
  w.request_rotation();  // nothing written yet: no empty file comes of it
  const Bytes first = write_frames(w, 2);
  w.request_rotation();
  w.request_rotation();  // a second request before the next record changes nothing
  const auto h = test::encoded(header_at(1001, 0));
  const Bytes d = data_of(1001, 0);
  ASSERT_TRUE(w.write_frame(h, d).ok());
  ASSERT_TRUE(w.close().ok());
  ASSERT_EQ(w.files().size(), 2u);
  EXPECT_EQ(test::read_file(w.files()[0].path), first);
  Bytes second;
  test::append(second, h);
  test::append(second, d);
  EXPECT_EQ(test::read_file(w.files()[1].path), second);
}

// Rotation without fsync (the run file's default, output.fsync_rotated false): the file
// system is remembered when the first rotated file closes, and synced (and forgotten) by
// close(). The files are whole either way.
void write_records(RotatingFile& f, std::size_t n, const Bytes& record) {
  for (std::size_t i = 0; i < n; ++i) {
    const Piece p = bytes_piece(record);
    ASSERT_TRUE(f.write({&p, 1}).ok()) << i;
  }
}

TEST(RotatingFile, FilesClosedByRotationAreSyncedOnceAtCloseWithoutFsyncRotated) {
  test::TempDir dir;
  RotationOptions o = rotation(2 * kFrame);
  o.fsync_rotated = false;
  RotatingFile f(test::simple_paths(dir.path()), o);
  const Bytes record = data_of(1000, 1);
  write_records(f, 2, record);
  EXPECT_EQ(f.unsynced_file_systems(), 0u) << "nothing closed yet";
  write_records(f, 3, record);  // two rotations, both on the one file system
  EXPECT_EQ(f.unsynced_file_systems(), 1u);
  ASSERT_TRUE(f.close().ok());
  EXPECT_EQ(f.unsynced_file_systems(), 0u) << "close() synced it";
  ASSERT_EQ(f.files().size(), 3u);
  for (const FileRecord& r : f.files()) {
    EXPECT_EQ(std::filesystem::file_size(r.path), r.bytes);
    EXPECT_FALSE(r.open);
  }
  EXPECT_EQ(f.stats().write_errors, 0u);
}

TEST(RotatingFile, FsyncRotatedSyncsEachFileAsItCloses) {
  for (const bool fsync_on_close : {true, false}) {
    test::TempDir dir;
    RotationOptions o = rotation(kFrame);
    o.fsync_rotated = fsync_on_close;  // false with no fsync at all: nothing to sync later
    o.output.fsync_on_close = fsync_on_close;
    RotatingFile f(test::simple_paths(dir.path()), o);
    write_records(f, 3, data_of(1000, 1));
    EXPECT_EQ(f.unsynced_file_systems(), 0u) << fsync_on_close;
    ASSERT_TRUE(f.close().ok());
    EXPECT_EQ(f.files().size(), 3u);
  }
}

}  // namespace
}  // namespace rocecap::writers
