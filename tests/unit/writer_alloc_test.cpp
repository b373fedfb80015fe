// The per-frame write path allocates nothing: global operator new is counted in this test
// executable and must not move while frames, fill frames and packets are written to an open file.
#include <gtest/gtest.h>

#include "counting_new.hpp"
#include "writer_test_util.hpp"
#include "writers/codif_header_writer.hpp"
#include "writers/pcap_writer.hpp"
#include "writers/raw_writer.hpp"

namespace rocecap::writers {
namespace {

using test::Bytes;

RotationOptions no_rotation() {
  RotationOptions o;
  o.buffer_bytes = 1 << 20;
  return o;
}

capture::codif::Header fill_template() {
  capture::codif::Header h;
  h.version = 3;
  h.nbits = 8;
  h.nchan = 1;
  h.period = 1;
  h.data_words = 1024;
  h.total_samples = 81920;
  return h;
}

constexpr capture::codif::Timing kTiming{
    .samples_per_frame = 8192, .frames_per_period = 10, .period = 1};

TEST(WriterAllocations, WritePathAllocatesNothingOnceAFileIsOpen) {
  test::TempDir dir;
  const Bytes header = test::pattern(64, 1), data = test::pattern(8192, 2);
  const std::span<const std::byte, 64> h(header.data(), 64);
  RawWriter raw(test::simple_paths(dir.path(), "raw"), no_rotation());
  CodifHeaderWriter hdr(test::simple_paths(dir.path(), "hdr"), no_rotation());
  PcapWriter pcap(test::simple_paths(dir.path(), "pcap"), no_rotation());
  // First writes open the files: allocation allowed there.
  ASSERT_TRUE(raw.write_frame(h, data).ok());
  ASSERT_TRUE(hdr.write_frame(h).ok());
  ASSERT_TRUE(pcap.write_packet(1, header, data).ok());

  const std::size_t before = rocecap::test::allocations();
  for (int i = 0; i < 2000; ++i) {  // 16 MiB per stream: many staging-buffer flushes
    ASSERT_TRUE(raw.write_frame(h, data).ok());
    ASSERT_TRUE(hdr.write_frame(h).ok());
    ASSERT_TRUE(pcap.write_packet(i, header, data).ok());
  }
  ASSERT_TRUE(raw.write_fill(fill_template(), kTiming, 100).ok());
  ASSERT_TRUE(hdr.write_fill(fill_template(), kTiming, 100).ok());
  EXPECT_EQ(rocecap::test::allocations() - before, 0u);

  ASSERT_TRUE(raw.close().ok());
  EXPECT_EQ(raw.stats().frames_written, 2101u);
  EXPECT_EQ(std::filesystem::file_size(dir.path() / "raw.0"), 2101u * (64 + 8192));
}

}  // namespace
}  // namespace rocecap::writers
