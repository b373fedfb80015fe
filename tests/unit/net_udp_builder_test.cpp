// write_udp_headers produces the exact bytes of a known frame; internet_checksum matches
// published values.
#include <gtest/gtest.h>

#include <vector>

#include "capture/net/udp_builder.hpp"

namespace rocecap::capture::net {
namespace {

std::vector<std::byte> bytes(std::initializer_list<int> v) {
  std::vector<std::byte> b;
  for (int x : v)
    b.push_back(static_cast<std::byte>(x));
  return b;
}

TEST(NetBuilder, ChecksumOfAKnownIpv4Header) {
  // Widely published example header 45 00 00 73 00 00 40 00 40 11 [b8 61] c0 a8 00 01 c0 a8 00 c7.
  auto h = bytes({0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
                  0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7});
  EXPECT_EQ(internet_checksum(h), 0xb861);
  h[10] = std::byte{0xb8};
  h[11] = std::byte{0x61};
  EXPECT_EQ(internet_checksum(h), 0);  // a correct header sums to all ones
}

TEST(NetBuilder, ExactBytesWithOneVlanTag) {
  UdpFrameSpec s;
  s.dst_mac = {0x01, 0x00, 0x5e, 0x11, 0x00, 0x02};
  s.src_mac = {0x02, 0x11, 0x22, 0x33, 0x44, 0x55};
  s.vlan_count = 1;
  s.vlans[0] = {0x8100, 0x6064};
  s.ttl = 0x40;
  s.ip_id = 0x1234;
  s.src_ip = 0xC0A80001;  // 192.168.0.1
  s.dst_ip = 0xC0A800C7;  // 192.168.0.199
  s.src_port = 0x9C40;
  s.dst_port = 0x8CA1;
  std::vector<std::byte> out(64, std::byte{0xEE});
  ASSERT_EQ(write_udp_headers(s, 87, out), 46u);
  // The IPv4 header is the published example above except for the id (0x1234), whose
  // one's-complement effect moves the checksum from b861 to a62d.
  const auto expected = bytes({
      0x01, 0x00, 0x5e, 0x11, 0x00, 0x02, 0x02, 0x11, 0x22, 0x33, 0x44, 0x55,  // MACs
      0x81, 0x00, 0x60, 0x64, 0x08, 0x00,                                      // tag, type
      0x45, 0x00, 0x00, 0x73, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0xa6, 0x2d,  // IPv4
      0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,                          //
      0x9c, 0x40, 0x8c, 0xa1, 0x00, 0x5f, 0x00, 0x00,                          // UDP
  });
  EXPECT_EQ(std::vector<std::byte>(out.begin(), out.begin() + 46), expected);
  EXPECT_EQ(out[46], std::byte{0xEE});  // payload area untouched
}

TEST(NetBuilder, OptionsAreNopsAndCounted) {
  UdpFrameSpec s;
  s.ip_option_words = 2;
  std::vector<std::byte> out(50);
  ASSERT_EQ(udp_header_bytes(s), 50u);
  ASSERT_EQ(write_udp_headers(s, 0, out), 50u);
  EXPECT_EQ(out[14], std::byte{0x47});
  for (std::size_t i = 34; i < 42; ++i)
    EXPECT_EQ(out[i], std::byte{0x01});
  EXPECT_EQ(internet_checksum(std::span(out).subspan(14, 28)), 0);
}

TEST(NetBuilder, RefusesWhatDoesNotFit) {
  UdpFrameSpec s;
  std::vector<std::byte> out(41);
  EXPECT_EQ(write_udp_headers(s, 0, out), 0u);  // needs 42
  out.resize(42);
  EXPECT_EQ(write_udp_headers(s, 65507, out), 42u);
  EXPECT_EQ(write_udp_headers(s, 65508, out), 0u);  // IPv4 total length > 65535
  s.vlan_count = 3;
  out.resize(100);
  EXPECT_EQ(write_udp_headers(s, 0, out), 0u);
  s.vlan_count = 0;
  s.ip_option_words = 11;
  EXPECT_EQ(write_udp_headers(s, 0, out), 0u);
}

}  // namespace
}  // namespace rocecap::capture::net
