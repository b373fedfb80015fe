#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <vector>

#include "capture/net/packet.hpp"
#include "tools/lib/pcap_file.hpp"
#include "tools/lib/udp_frame.hpp"

namespace rocecap::tools {
namespace {

std::vector<std::byte> read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(c.size());
  for (std::size_t i = 0; i < c.size(); ++i)
    out[i] = std::byte(static_cast<unsigned char>(c[i]));
  return out;
}

uint32_t le32(const std::vector<std::byte>& b, std::size_t off) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i)
    v = (v << 8) | std::to_integer<uint32_t>(b[off + i]);
  return v;
}

uint16_t be16(std::span<const std::byte> b, std::size_t off) {
  return static_cast<uint16_t>((std::to_integer<uint16_t>(b[off]) << 8) |
                               std::to_integer<uint16_t>(b[off + 1]));
}

std::vector<std::byte> payload_bytes(std::size_t n, uint8_t seed) {
  std::vector<std::byte> p(n);
  for (std::size_t i = 0; i < n; ++i)
    p[i] = std::byte(static_cast<uint8_t>(seed + i * 7));
  return p;
}

class GenPcapFile : public ::testing::Test {
 protected:
  std::filesystem::path path_ = std::filesystem::temp_directory_path() /
                                ("gen_pcap_file_test_" + std::to_string(::getpid()) + ".pcap");
  void TearDown() override { std::filesystem::remove(path_); }
};

TEST_F(GenPcapFile, FileAndRecordHeadersAndFramesParseBack) {
  uint32_t group = 0, src = 0;
  ASSERT_TRUE(capture::net::parse_ipv4("239.17.0.2", group));
  ASSERT_TRUE(capture::net::parse_ipv4("192.0.2.12", src));
  const auto payload = payload_bytes(8256, 3);
  std::array<std::byte, kEthIpv4UdpBytes> head;
  write_udp_headers(UdpEndpoints{src, group, 49153, 36002}, 77, 1, payload, head);
  {
    PcapFileWriter w(path_.string(), 65536);  // small buffer: exercises several flushes
    w.write(1'700'000'000'123'456'789, head, payload);
    w.write(1'700'000'001'000'000'001, head, payload);
    w.close();
    EXPECT_EQ(w.records(), 2u);
  }
  const auto file = read_all(path_);
  ASSERT_EQ(file.size(), 24 + 2 * (16 + 42 + 8256));
  EXPECT_EQ(le32(file, 0), 0xa1b23c4du);
  EXPECT_EQ(std::to_integer<int>(file[0]), 0x4d);  // little-endian on disk
  EXPECT_EQ(le32(file, 4), 2u | (4u << 16));       // version 2.4
  EXPECT_EQ(le32(file, 16), 262144u);
  EXPECT_EQ(le32(file, 20), 1u);  // Ethernet
  EXPECT_EQ(le32(file, 24), 1'700'000'000u);
  EXPECT_EQ(le32(file, 28), 123'456'789u);
  EXPECT_EQ(le32(file, 32), 42u + 8256);
  EXPECT_EQ(le32(file, 36), 42u + 8256);
  const std::size_t second = 24 + 16 + 42 + 8256;
  EXPECT_EQ(le32(file, second), 1'700'000'001u);
  EXPECT_EQ(le32(file, second + 4), 1u);

  const std::span<const std::byte> frame(file.data() + 40, 42 + 8256);
  capture::net::UdpFrame u;
  ASSERT_EQ(capture::net::parse_udp(frame, u), capture::net::ParseError::ok);
  EXPECT_EQ(u.src_ip, src);
  EXPECT_EQ(u.dst_ip, group);
  EXPECT_EQ(u.src_port, 49153);
  EXPECT_EQ(u.dst_port, 36002);
  EXPECT_EQ(u.payload_offset, 42);
  EXPECT_EQ(u.payload_bytes, 8256u);
  EXPECT_EQ(u.dst_mac, capture::net::multicast_mac(group));
  EXPECT_EQ(u.src_mac, (std::array<uint8_t, 6>{0x02, 0x00, 192, 0, 2, 12}));
  EXPECT_TRUE(std::equal(payload.begin(), payload.end(), frame.begin() + 42));

  const auto ip = frame.subspan(14, 20);
  EXPECT_EQ(std::to_integer<int>(ip[8]), 1);  // TTL
  EXPECT_EQ(be16(ip, 4), 77);                 // IP id
  EXPECT_EQ(checksum_fold(checksum_add(0, ip)), 0) << "IPv4 header checksum";
  // UDP checksum over the pseudo-header verifies to zero.
  uint32_t sum = checksum_add(0, ip.subspan(12, 8));
  sum += 17 + be16(frame, 14 + 20 + 4);
  sum = checksum_add(sum, frame.subspan(34));
  EXPECT_EQ(checksum_fold(sum), 0) << "UDP checksum";
  EXPECT_NE(be16(frame, 14 + 20 + 6), 0) << "checksum present";
}

TEST(GenUdpChecksum, MatchesTheRfc1071Example) {
  // RFC 1071 section 3: 00 01 f2 03 f4 f5 f6 f7 sums to ddf2.
  const std::array<std::byte, 8> b{std::byte{0x00}, std::byte{0x01}, std::byte{0xf2},
                                   std::byte{0x03}, std::byte{0xf4}, std::byte{0xf5},
                                   std::byte{0xf6}, std::byte{0xf7}};
  EXPECT_EQ(checksum_add(0, b), 0xddf2u);
  EXPECT_EQ(checksum_fold(checksum_add(0, b)), 0x220d);
  // Odd length: the last byte is padded with a zero on the right; 6 bytes + 1 taken apart.
  EXPECT_EQ(checksum_add(0, std::span<const std::byte>(b).first(7)), 0xddf2u - 0xf7u);
  EXPECT_EQ(checksum_add(checksum_add(0, std::span<const std::byte>(b).first(4)),
                         std::span<const std::byte>(b).subspan(4)),
            0xddf2u);
}

TEST(GenPcapFileErrors, UncreatableFileNamesThePath) {
  try {
    PcapFileWriter w("/nonexistent-dir-rocecap/x.pcap");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir-rocecap/x.pcap"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("No such file"), std::string::npos) << e.what();
  }
}

TEST(GenPcapFileErrors, FullDeviceReportsNoSpaceWithThePath) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  const auto payload = payload_bytes(9000, 1);
  std::array<std::byte, kEthIpv4UdpBytes> head{};
  try {
    PcapFileWriter w("/dev/full", 65536);
    for (int i = 0; i < 20; ++i)
      w.write(i, head, payload);
    w.close();
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/dev/full"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("No space left"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rocecap::tools
