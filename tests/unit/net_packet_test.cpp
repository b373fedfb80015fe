// parse_udp, multicast_mac and the dotted-quad helpers, on frames built byte by byte.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "capture/net/packet.hpp"
#include "capture/net/udp_builder.hpp"

namespace rocecap::capture::net {
namespace {

using Bytes = std::vector<std::byte>;

constexpr uint32_t kSrc = 0xC0000201;    // 192.0.2.1
constexpr uint32_t kGroup = 0xEF110001;  // 239.17.0.1

UdpFrameSpec spec(uint8_t vlans = 0, uint8_t option_words = 0) {
  UdpFrameSpec s;
  s.dst_mac = {0x01, 0x00, 0x5e, 0x11, 0x00, 0x01};
  s.src_mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x07};
  s.vlan_count = vlans;
  s.vlans[0] = {kEtherTypeQinQ, 0x20C8};  // PCP 1, VID 200
  s.vlans[1] = {kEtherTypeVlan, 0x012C};  // VID 300
  s.ip_option_words = option_words;
  s.src_ip = kSrc;
  s.dst_ip = kGroup;
  s.src_port = 40000;
  s.dst_port = 36001;
  return s;
}

// A frame with a payload of `payload` bytes counting 0, 1, 2, ...
Bytes frame(const UdpFrameSpec& s, std::size_t payload) {
  Bytes b(udp_header_bytes(s) + payload);
  EXPECT_EQ(write_udp_headers(s, payload, b), udp_header_bytes(s));
  for (std::size_t i = 0; i < payload; ++i) {
    b[udp_header_bytes(s) + i] = static_cast<std::byte>(i);
  }
  return b;
}

void put16(Bytes& b, std::size_t off, uint16_t v) {
  b[off] = static_cast<std::byte>(v >> 8);
  b[off + 1] = static_cast<std::byte>(v);
}

uint16_t get16(const Bytes& b, std::size_t off) {
  return static_cast<uint16_t>((std::to_integer<unsigned>(b[off]) << 8) |
                               std::to_integer<unsigned>(b[off + 1]));
}

ParseError parse(const Bytes& b, UdpFrame& f) {
  return parse_udp(b, f);
}
ParseError parse(const Bytes& b) {
  UdpFrame f;
  return parse_udp(b, f);
}

TEST(NetParse, PlainFrameOffsetsAndAddresses) {
  const Bytes b = frame(spec(), 100);
  UdpFrame f;
  ASSERT_EQ(parse(b, f), ParseError::ok);
  EXPECT_EQ(f.vlan_count, 0);
  EXPECT_EQ(f.vlan_id, 0);
  EXPECT_EQ(f.ip_offset, 14);
  EXPECT_EQ(f.udp_offset, 34);
  EXPECT_EQ(f.payload_offset, 42);
  EXPECT_EQ(f.payload_bytes, 100u);
  EXPECT_EQ(f.frame_bytes, 142u);
  EXPECT_EQ(f.src_ip, kSrc);
  EXPECT_EQ(f.dst_ip, kGroup);
  EXPECT_EQ(f.src_port, 40000);
  EXPECT_EQ(f.dst_port, 36001);
  EXPECT_EQ(f.dst_mac, (std::array<uint8_t, 6>{0x01, 0x00, 0x5e, 0x11, 0x00, 0x01}));
  EXPECT_EQ(f.src_mac, (std::array<uint8_t, 6>{0x02, 0x00, 0x00, 0x00, 0x00, 0x07}));
  EXPECT_EQ(std::to_integer<int>(b[f.payload_offset + 5]), 5);
}

TEST(NetParse, OneVlanTag8100) {
  UdpFrameSpec s = spec(1);
  s.vlans[0] = {kEtherTypeVlan, 0xE00A};  // PCP 7, VID 10
  const Bytes b = frame(s, 64);
  UdpFrame f;
  ASSERT_EQ(parse(b, f), ParseError::ok);
  EXPECT_EQ(f.vlan_count, 1);
  EXPECT_EQ(f.vlan_id, 10);
  EXPECT_EQ(f.ip_offset, 18);
  EXPECT_EQ(f.udp_offset, 38);
  EXPECT_EQ(f.payload_offset, 46);
  EXPECT_EQ(f.payload_bytes, 64u);
  EXPECT_EQ(f.frame_bytes, 110u);
}

TEST(NetParse, OneVlanTag88A8) {
  const Bytes b = frame(spec(1), 64);
  UdpFrame f;
  ASSERT_EQ(parse(b, f), ParseError::ok);
  EXPECT_EQ(f.vlan_count, 1);
  EXPECT_EQ(f.vlan_id, 200);
  EXPECT_EQ(f.payload_offset, 46);
}

TEST(NetParse, TwoVlanTagsReportOuterVid) {
  const Bytes b = frame(spec(2), 64);
  UdpFrame f;
  ASSERT_EQ(parse(b, f), ParseError::ok);
  EXPECT_EQ(f.vlan_count, 2);
  EXPECT_EQ(f.vlan_id, 200);
  EXPECT_EQ(f.ip_offset, 22);
  EXPECT_EQ(f.udp_offset, 42);
  EXPECT_EQ(f.payload_offset, 50);
  EXPECT_EQ(f.frame_bytes, 114u);
  EXPECT_EQ(f.dst_port, 36001);
}

TEST(NetParse, TwoDot1QTags) {
  UdpFrameSpec s = spec(2);
  s.vlans[0] = {kEtherTypeVlan, 0x0FFF};
  const Bytes b = frame(s, 8);
  UdpFrame f;
  ASSERT_EQ(parse(b, f), ParseError::ok);
  EXPECT_EQ(f.vlan_count, 2);
  EXPECT_EQ(f.vlan_id, 0x0FFF);
}

TEST(NetParse, ThreeTagsRejected) {
  Bytes b = frame(spec(2), 64);
  const std::byte tag[4] = {std::byte{0x81}, std::byte{0x00}, std::byte{0x00}, std::byte{0x05}};
  b.insert(b.begin() + 12, tag, tag + 4);
  EXPECT_EQ(parse(b), ParseError::too_many_vlans);
}

TEST(NetParse, IpOptionsAcceptedForEveryIhl) {
  for (uint8_t words = 1; words <= 10; ++words) {
    const Bytes b = frame(spec(1, words), 32);
    UdpFrame f;
    ASSERT_EQ(parse(b, f), ParseError::ok) << "IHL " << 5 + words;
    EXPECT_EQ(std::to_integer<int>(b[18]) & 0x0F, 5 + words);
    EXPECT_EQ(f.ip_offset, 18);
    EXPECT_EQ(f.udp_offset, 18 + 20 + 4 * words);
    EXPECT_EQ(f.payload_offset, 18 + 20 + 4 * words + 8);
    EXPECT_EQ(f.payload_bytes, 32u);
    EXPECT_EQ(f.frame_bytes, b.size());
    EXPECT_EQ(f.dst_port, 36001);
  }
}

TEST(NetParse, EthernetPaddingExcluded) {
  Bytes b = frame(spec(), 4);  // 46 bytes: below the 60-byte Ethernet minimum
  b.resize(60, std::byte{0});
  UdpFrame f;
  ASSERT_EQ(parse(b, f), ParseError::ok);
  EXPECT_EQ(f.payload_bytes, 4u);
  EXPECT_EQ(f.frame_bytes, 46u);
}

TEST(NetParse, SplitHeadOnlyHeadersIsEnough) {
  const Bytes b = frame(spec(), 8256);  // the 8298-byte ATCA-style frame
  ASSERT_EQ(b.size(), 8298u);
  UdpFrame f;
  ASSERT_EQ(parse_udp(std::span(b).first(42), b.size(), f), ParseError::ok);
  EXPECT_EQ(f.payload_offset, 42);
  EXPECT_EQ(f.payload_bytes, 8256u);
  EXPECT_EQ(f.frame_bytes, 8298u);
}

TEST(NetParse, SplitHeadShorterThanHeaders) {
  const Bytes b = frame(spec(), 8256);
  for (std::size_t head : {0, 10, 13, 20, 33, 34, 41}) {
    UdpFrame f;
    EXPECT_EQ(parse_udp(std::span(b).first(head), b.size(), f), ParseError::headers_beyond_split)
        << "head " << head;
  }
  const Bytes v = frame(spec(2), 8256);  // tags move the headers past a 44-byte split
  UdpFrame f;
  EXPECT_EQ(parse_udp(std::span(v).first(44), v.size(), f), ParseError::headers_beyond_split);
}

TEST(NetParse, SplitInsideIpOptions) {
  const Bytes b = frame(spec(0, 10), 1000);  // UDP header at 74..82
  UdpFrame f;
  EXPECT_EQ(parse_udp(std::span(b).first(64), b.size(), f), ParseError::headers_beyond_split);
  EXPECT_EQ(parse_udp(std::span(b).first(82), b.size(), f), ParseError::ok);
}

TEST(NetParse, TruncatedWhenTheWireFrameIsShort) {
  const Bytes b = frame(spec(), 100);
  for (std::size_t len : {0, 5, 13, 20, 33}) {
    const Bytes cut(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(len));
    EXPECT_EQ(parse(cut), ParseError::truncated) << "len " << len;
  }
  const Bytes tagged = frame(spec(1), 100);
  EXPECT_EQ(parse(Bytes(tagged.begin(), tagged.begin() + 16)), ParseError::truncated);
  // Cut inside the UDP header: the IPv4 total length no longer fits the wire frame.
  EXPECT_EQ(parse(Bytes(b.begin(), b.begin() + 38)), ParseError::bad_ip_length);
  // A long head does not help when the wire says the frame is short.
  UdpFrame f;
  EXPECT_EQ(parse_udp(b, 30, f), ParseError::truncated);
}

TEST(NetParse, NotIpv4) {
  Bytes arp = frame(spec(), 28);
  put16(arp, 12, 0x0806);
  EXPECT_EQ(parse(arp), ParseError::not_ipv4);
  Bytes v6 = frame(spec(1), 28);
  put16(v6, 16, 0x86DD);
  EXPECT_EQ(parse(v6), ParseError::not_ipv4);
  Bytes version6 = frame(spec(), 28);
  version6[14] = std::byte{0x65};
  EXPECT_EQ(parse(version6), ParseError::not_ipv4);
}

TEST(NetParse, BadIpHeaderWhenIhlBelowFive) {
  for (int ihl = 0; ihl < 5; ++ihl) {
    Bytes b = frame(spec(), 28);
    b[14] = static_cast<std::byte>(0x40 | ihl);
    EXPECT_EQ(parse(b), ParseError::bad_ip_header) << "IHL " << ihl;
  }
}

TEST(NetParse, IpOptionsTooLong) {
  Bytes b = frame(spec(), 12);  // 54 bytes; IHL 15 wants 60 header bytes from offset 14
  b[14] = std::byte{0x4F};
  EXPECT_EQ(parse(b), ParseError::ip_options_too_long);
}

TEST(NetParse, BadIpTotalLength) {
  Bytes longer = frame(spec(), 100);
  put16(longer, 16, static_cast<uint16_t>(get16(longer, 16) + 1));
  EXPECT_EQ(parse(longer), ParseError::bad_ip_length);
  Bytes below_header = frame(spec(), 100);
  put16(below_header, 16, 19);
  EXPECT_EQ(parse(below_header), ParseError::bad_ip_length);
  Bytes options = frame(spec(0, 2), 100);  // total 24 < IHL 28
  put16(options, 16, 24);
  EXPECT_EQ(parse(options), ParseError::bad_ip_length);
}

TEST(NetParse, Fragments) {
  Bytes more = frame(spec(), 100);
  put16(more, 20, 0x2000);
  EXPECT_EQ(parse(more), ParseError::fragment);
  Bytes offset = frame(spec(), 100);
  put16(offset, 20, 0x0001);
  EXPECT_EQ(parse(offset), ParseError::fragment);
  Bytes last = frame(spec(), 100);
  put16(last, 20, 0x1FFF);
  EXPECT_EQ(parse(last), ParseError::fragment);
  Bytes dont = frame(spec(), 100);
  put16(dont, 20, 0x4000);
  EXPECT_EQ(parse(dont), ParseError::ok);
}

TEST(NetParse, NotUdp) {
  Bytes tcp = frame(spec(), 100);
  tcp[23] = std::byte{6};
  EXPECT_EQ(parse(tcp), ParseError::not_udp);
  Bytes igmp = frame(spec(), 100);
  igmp[23] = std::byte{kIpProtoIgmp};
  EXPECT_EQ(parse(igmp), ParseError::not_udp);
}

TEST(NetParse, BadUdpLength) {
  for (int delta : {-1, 1, -100}) {
    Bytes b = frame(spec(), 100);
    put16(b, 38, static_cast<uint16_t>(108 + delta));
    EXPECT_EQ(parse(b), ParseError::bad_udp_length) << delta;
  }
  Bytes short_udp = frame(spec(), 100);
  put16(short_udp, 38, 7);
  EXPECT_EQ(parse(short_udp), ParseError::bad_udp_length);
  Bytes no_room = frame(spec(), 100);  // IP datagram too short to hold a UDP header
  put16(no_room, 16, 24);
  EXPECT_EQ(parse(no_room), ParseError::bad_udp_length);
}

TEST(NetParse, EveryReasonHasItsOwnName) {
  std::set<std::string> names;
  for (std::size_t i = 0; i < kParseErrorCount; ++i) {
    const auto name = to_string(static_cast<ParseError>(i));
    EXPECT_NE(name, "unknown");
    names.emplace(name);
  }
  EXPECT_EQ(names.size(), kParseErrorCount);
  EXPECT_EQ(to_string(ParseError::headers_beyond_split), "headers_beyond_split");
  EXPECT_EQ(to_string(ParseError::count_), "unknown");
}

TEST(NetAddr, MulticastMac) {
  EXPECT_EQ(multicast_mac(0xEF110001),
            (std::array<uint8_t, 6>{0x01, 0x00, 0x5e, 0x11, 0x00, 0x01}));
  // Only the low 23 bits map: 239.145.0.1 shares the MAC of 239.17.0.1.
  EXPECT_EQ(multicast_mac(0xEF910001), multicast_mac(0xEF110001));
  EXPECT_EQ(multicast_mac(0xE07FFFFF),
            (std::array<uint8_t, 6>{0x01, 0x00, 0x5e, 0x7F, 0xFF, 0xFF}));
}

TEST(NetAddr, ParseIpv4Accepts) {
  uint32_t a = 0;
  ASSERT_TRUE(parse_ipv4("239.17.0.1", a));
  EXPECT_EQ(a, 0xEF110001u);
  ASSERT_TRUE(parse_ipv4("0.0.0.0", a));
  EXPECT_EQ(a, 0u);
  ASSERT_TRUE(parse_ipv4("255.255.255.255", a));
  EXPECT_EQ(a, 0xFFFFFFFFu);
  ASSERT_TRUE(parse_ipv4("192.0.2.10", a));
  EXPECT_EQ(a, 0xC000020Au);
}

TEST(NetAddr, ParseIpv4Rejects) {
  for (const char* bad : {"1.2.3", "256.0.0.1", "01.2.3.4", "1.2.3.4x", "1.2.3.4.", "", "1..2.3",
                          " 1.2.3.4", "1.2.3.4 ", "-1.2.3.4", "+1.2.3.4", "1.2.3.0004", "1.2.3.00",
                          "1.2.3.-0", "4294967297.0.0.1", "a.b.c.d", "1.2.3.4.5"}) {
    uint32_t a = 0x12345678;
    EXPECT_FALSE(parse_ipv4(bad, a)) << '"' << bad << '"';
    EXPECT_EQ(a, 0x12345678u) << "output touched for " << bad;
  }
}

TEST(NetAddr, FormatIpv4) {
  EXPECT_STREQ(format_ipv4(0xC0000201).data(), "192.0.2.1");
  EXPECT_STREQ(format_ipv4(0).data(), "0.0.0.0");
  EXPECT_STREQ(format_ipv4(0xFFFFFFFF).data(), "255.255.255.255");
  uint32_t back = 0;
  ASSERT_TRUE(parse_ipv4(format_ipv4(0xEF0A0B0C).data(), back));
  EXPECT_EQ(back, 0xEF0A0B0Cu);
}

TEST(NetAddr, IsMulticast) {
  EXPECT_TRUE(is_multicast(0xE0000001));
  EXPECT_TRUE(is_multicast(0xEFFFFFFF));
  EXPECT_FALSE(is_multicast(0xDFFFFFFF));
  EXPECT_FALSE(is_multicast(0xF0000000));
}

}  // namespace
}  // namespace rocecap::capture::net
