// The pcap file's staging buffer grows with the streams it carries, with O_DIRECT only.
#include "writers/pcap_buffer.hpp"

#include <gtest/gtest.h>

namespace rocecap::writers {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

TEST(PcapBuffer, ODirectTakesEveryStreamsBufferUpToTheCap) {
  EXPECT_EQ(pcap_buffer_bytes(kMiB, 6, true), 6 * kMiB);
  EXPECT_EQ(pcap_buffer_bytes(kMiB, 1, true), kMiB);
  EXPECT_EQ(pcap_buffer_bytes(kMiB, 0, true), kMiB);  // an interface without streams yet
  EXPECT_EQ(pcap_buffer_bytes(kMiB, kPcapBufferStreams, true), kPcapBufferStreams * kMiB);
  EXPECT_EQ(pcap_buffer_bytes(kMiB, 200, true), kPcapBufferStreams * kMiB);
  EXPECT_EQ(pcap_buffer_bytes(kMiB / 4, 3, true), 3 * kMiB / 4);
}

TEST(PcapBuffer, BufferedFilesKeepOneStreamsBuffer) {
  EXPECT_EQ(pcap_buffer_bytes(kMiB, 6, false), kMiB);
  EXPECT_EQ(pcap_buffer_bytes(kMiB, 200, false), kMiB);
}

}  // namespace
}  // namespace rocecap::writers
