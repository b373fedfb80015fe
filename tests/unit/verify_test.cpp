// rocecap verify's core: the expectation derived from a generator summary (hand-checked cases
// of the impairment semantics and the sequencing rules), and the byte comparison of files
// written by the real RawWriter / CodifHeaderWriter.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tests/unit/writer_test_util.hpp"
#include "tools/lib/gen_frame.hpp"
#include "tools/lib/payload_pattern.hpp"
#include "tools/lib/verify_files.hpp"
#include "tools/lib/verify_model.hpp"
#include "writers/raw_writer.hpp"

namespace rocecap::tools {
namespace {

using Gaps = std::vector<std::pair<uint64_t, uint64_t>>;

GenStream stream(uint64_t first, uint64_t frames) {
  GenStream s;
  s.group = "239.17.0.1";
  s.port = 36001;
  s.source = "192.0.2.11";
  s.first_index = first;
  s.frames = frames;
  return s;
}

TEST(VerifyModel, EveryImpairmentAndLostEdgesNotCounted) {
  GenStream s = stream(100, 20);
  s.dropped = {100, 119};  // both ends: the receiver never knows of them
  s.swapped = {102};       // 103 then 102
  s.bad_sync = {105};
  s.duplicated = {107};
  s.truncated = {110};
  s.invalid = {112};
  const StreamExpectation e = expect_stream(s, 8);
  // Arrivals: 101 103 102 104 106 107 107 108 109 111 112..118.
  EXPECT_EQ(e.packets, 17u);
  EXPECT_EQ(e.duplicate, 1u);
  EXPECT_EQ(e.late, 1u);
  EXPECT_EQ(e.late_dropped, 0u);
  EXPECT_EQ(e.invalid, 1u);
  EXPECT_EQ(e.bad_sync, 1u);
  EXPECT_EQ(e.size_mismatch, 1u);
  ASSERT_TRUE(e.any);
  EXPECT_EQ(e.first, 101u);
  EXPECT_EQ(e.last, 118u);
  EXPECT_EQ(e.lost, 2u);
  EXPECT_EQ(e.gaps, (Gaps{{105, 1}, {110, 1}}));
  EXPECT_EQ(e.placed(), 16u);
  ASSERT_EQ(e.slots.size(), 18u);
  EXPECT_EQ(e.slots[112 - 101], Slot::invalid);
  EXPECT_EQ(e.slots[105 - 101], Slot::missing);
  EXPECT_EQ(e.slots[102 - 101], Slot::frame);
}

TEST(VerifyModel, SwapAtTheStartDropsTheLateFirstFrame) {
  GenStream s = stream(0, 5);
  s.swapped = {0};  // 1 arrives first and starts the stream; 0 is behind it
  const StreamExpectation e = expect_stream(s, 8);
  EXPECT_EQ(e.packets, 5u);
  EXPECT_EQ(e.late, 0u);
  EXPECT_EQ(e.late_dropped, 1u);
  EXPECT_EQ(e.first, 1u);
  EXPECT_EQ(e.last, 4u);
  EXPECT_EQ(e.lost, 0u);
}

TEST(VerifyModel, ReorderWindowDecidesWhetherASwapIsPlaced) {
  GenStream s = stream(10, 6);
  s.swapped = {12};
  const StreamExpectation one = expect_stream(s, 1);
  EXPECT_EQ(one.late, 0u);
  EXPECT_EQ(one.late_dropped, 1u);
  EXPECT_EQ(one.lost, 1u);
  EXPECT_EQ(one.gaps, (Gaps{{12, 1}}));
  const StreamExpectation two = expect_stream(s, 2);
  EXPECT_EQ(two.late, 1u);
  EXPECT_EQ(two.late_dropped, 0u);
  EXPECT_EQ(two.lost, 0u);
}

TEST(VerifyModel, NothingPlacedAndBadSummaries) {
  GenStream s = stream(0, 3);
  s.dropped = {0, 1, 2};
  const StreamExpectation e = expect_stream(s, 8);
  EXPECT_FALSE(e.any);
  EXPECT_EQ(e.packets, 0u);
  EXPECT_EQ(e.lost, 0u);
  GenStream outside = stream(0, 3);
  outside.invalid = {3};
  EXPECT_THROW(expect_stream(outside, 8), std::invalid_argument);
  GenStream last_swap = stream(0, 3);
  last_swap.swapped = {2};
  EXPECT_THROW(expect_stream(last_swap, 8), std::invalid_argument);
  GenStream twice = stream(0, 3);
  twice.invalid = {1};
  twice.dropped = {1};
  EXPECT_THROW(expect_stream(twice, 8), std::invalid_argument);
}

TEST(VerifyHeaderField, NamesTheFieldOfAByte) {
  EXPECT_EQ(header_field_at(capture::codif::Layout::v3, 0, 0), "frame");
  EXPECT_EQ(header_field_at(capture::codif::Layout::v3, 4, 0), "seconds");
  EXPECT_EQ(header_field_at(capture::codif::Layout::v3, 10, 0x02), "invalid");
  EXPECT_EQ(header_field_at(capture::codif::Layout::v3, 10, 0x05), "atypical, complex");
  EXPECT_EQ(header_field_at(capture::codif::Layout::v3, 40, 0), "sync");
  EXPECT_EQ(header_field_at(capture::codif::Layout::v3, 12, 0), "unused bits");
  EXPECT_EQ(header_field_at(capture::codif::Layout::v1, 7, 0x80), "invalid");
  EXPECT_EQ(header_field_at(capture::codif::Layout::v1, 7, 0x40), "complex");
  EXPECT_EQ(header_field_at(capture::codif::Layout::v1, 44, 0), "sync");
}

// Writes what rocecapd's writer would for `e` through the real RawWriter: the generator's
// frames, fill frames for the gaps; rotated so that a frame sequence spans files.
class VerifyFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    params_.payload_bytes = 256;
    params_.total_samples = 0;  // the default frames per period
    frames_ = std::make_unique<FrameBuilder>(params_);
    GenStream s = stream(frames_->first_index(), 40);
    s.antenna = 2;
    s.dropped = {s.first_index + 5, s.first_index + 6};
    s.invalid = {s.first_index + 9};
    s.duplicated = {s.first_index + 12};
    expect_ = expect_stream(s, 8);
  }

  std::vector<ListedFile> write(bool strip) {
    writers::RotationOptions rot;
    rot.max_bytes = 10 * frames_->frame_bytes();
    rot.output.fsync_on_close = false;
    const auto dir = tmp_.path() / (strip ? "stripped" : "raw");
    std::filesystem::create_directories(dir);
    writers::RawWriter w(
        [dir](uint64_t seq, std::filesystem::path& out) {
          out = dir / ("f" + std::to_string(seq) + ".codif");
          return writers::Status{};
        },
        rot, writers::RawOptions{strip});
    std::vector<std::byte> buf(frames_->frame_bytes());
    for (uint64_t i = 0; i < expect_.slots.size(); ++i) {
      const uint64_t index = expect_.first + i;
      if (expect_.slots[i] == Slot::missing) {
        if (i > 0 && expect_.slots[i - 1] != Slot::missing) {
          uint64_t n = 0;
          while (expect_.slots[i + n] == Slot::missing)
            ++n;
          const capture::codif::Header h = frames_->header(2, index, Fate::plain);
          EXPECT_TRUE(w.write_fill(h, frames_->timing(), n).ok());
        }
        continue;
      }
      frames_->build(2, index, expect_.slots[i] == Slot::invalid ? Fate::invalid : Fate::plain,
                     buf);
      const std::span<const std::byte> all(buf);
      EXPECT_TRUE(w.write_frame(all.first<capture::codif::kHeaderBytes>(), all.subspan(64)).ok());
    }
    EXPECT_TRUE(w.close().ok());
    std::vector<ListedFile> out;
    for (const auto& f : w.files())
      out.push_back({f.path.filename().string(), f.path});
    return out;
  }

  SequenceSpec spec(bool headers) {
    return SequenceSpec{frames_.get(), 2, &expect_, headers, true, true, {}};
  }

  // The pattern byte at `offset` of frame `index` (antenna 2) xor `mask`, as "0x..".
  static std::string pattern_hex(uint64_t index, uint64_t offset, unsigned mask) {
    std::array<std::byte, 1> b{};
    fill_pattern(2, index, offset, b);
    char text[8];
    std::snprintf(text, sizeof text, "0x%02x", static_cast<unsigned>(b[0]) ^ mask);
    return text;
  }

  static void flip(const std::filesystem::path& p, long offset, uint8_t mask) {
    std::FILE* f = std::fopen(p.c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    std::fseek(f, offset, SEEK_SET);
    const int c = std::fgetc(f);
    std::fseek(f, offset, SEEK_SET);
    std::fputc(c ^ mask, f);
    std::fclose(f);
  }

  writers::test::TempDir tmp_;
  GenFrameParams params_;
  std::unique_ptr<FrameBuilder> frames_;
  StreamExpectation expect_;
};

TEST_F(VerifyFiles, WriterOutputMatchesAndEachCorruptionIsNamed) {
  const std::vector<ListedFile> files = write(false);
  ASSERT_EQ(files.size(), 4u);  // 40 frames, 10 per file
  EXPECT_EQ(compare_sequence(spec(true), files), "");
  const long frame = static_cast<long>(frames_->frame_bytes());
  const uint64_t third = expect_.first + 10 + 3;  // 4th frame of the 2nd file

  flip(files[1].path, 3 * frame + 64 + 17, 0x10);
  const std::string want = files[1].name + " offset " + std::to_string(3 * frame + 64 + 17) +
                           ", frame index " + std::to_string(third) + ": data byte 17: expected " +
                           pattern_hex(third, 17, 0) + ", found " + pattern_hex(third, 17, 0x10);
  EXPECT_EQ(compare_sequence(spec(true), files), want);
  flip(files[1].path, 3 * frame + 64 + 17, 0x10);  // back
  ASSERT_EQ(compare_sequence(spec(true), files), "");

  // The fill frame of index first+5 lies in the first file at frame 5: its invalid bit.
  flip(files[0].path, 5 * frame + 10, 0x02);
  EXPECT_EQ(compare_sequence(spec(true), files),
            files[0].name + " offset " + std::to_string(5 * frame + 10) + ", frame index " +
                std::to_string(expect_.first + 5) +
                ": header byte 10 (invalid): expected 0x02, found 0x00 (fill frame)");
  flip(files[0].path, 5 * frame + 10, 0x02);

  const writers::test::Bytes last = writers::test::read_file(files[3].path);
  std::filesystem::resize_file(files[3].path, std::filesystem::file_size(files[3].path) - 1);
  EXPECT_EQ(compare_sequence(spec(true), files), files[3].name + ": ends early at frame index " +
                                                     std::to_string(expect_.last) +
                                                     " (1 expected frames missing)");
  std::ofstream(files[3].path, std::ios::trunc | std::ios::binary)
          .write(reinterpret_cast<const char*>(last.data()),
                 static_cast<std::streamsize>(last.size()))
      << "xy";
  EXPECT_NE(compare_sequence(spec(true), files)
                .find(files[3].name + " offset " + std::to_string(10 * frame) +
                      ": data past the last expected frame"),
            std::string::npos);
}

TEST_F(VerifyFiles, StrippedDataAndCodifhdrAreTheSameSequence) {
  const std::vector<ListedFile> files = write(true);
  EXPECT_EQ(compare_sequence(spec(false), files), "");
  // With headers expected, the same files differ at once.
  EXPECT_NE(compare_sequence(spec(true), files), "");
  // A sequence without fill frames is shorter: these files then hold too much.
  SequenceSpec no_fill = spec(false);
  no_fill.fill_gaps = false;
  EXPECT_NE(compare_sequence(no_fill, files), "");
}

}  // namespace
}  // namespace rocecap::tools
