// The capture checker on synthetic captures built here by hand from the impairment semantics
// in gen_summary.hpp: a faithful capture passes, and each kind of damage is reported precisely.
#include "tests/integration/capture_check.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "capture/codif/header.hpp"
#include "capture/net/packet.hpp"
#include "tools/lib/payload_pattern.hpp"

namespace rocecap::itest {
namespace {

using Bytes = std::vector<std::byte>;

// 8192-byte payloads of 8-bit real samples, one channel: 8192 samples per frame, and
// 819200 samples per 1 s period: 100 frames per period, so index i is frame i % 100 of
// second i / 100.
tools::GenFrameParams params() {
  tools::GenFrameParams p;
  p.payload_bytes = 8192;
  p.nchan = 1;
  p.nbits = 8;
  p.period = 1;
  p.total_samples = 819200;
  p.epoch = 52;
  p.thread_id = 10;
  p.group_id = 3;
  p.station = "AT";
  return p;
}

tools::GenSummary summary() {
  tools::GenSummary s;
  s.frame = params();
  s.frame.start_seconds = 1;
  s.frame.start_frame = 90;
  for (uint32_t a = 0; a < 2; ++a) {
    tools::GenStream st;
    st.group = "239.17.0.1";
    st.port = 36001;
    st.source = a == 0 ? "192.0.2.11" : "192.0.2.12";
    st.antenna = a;
    st.first_index = 190;  // crosses the period boundary at 200
    st.frames = 20;
    if (a == 0) {
      st.dropped = {192};
      st.swapped = {194};
      st.duplicated = {197};
      st.bad_sync = {199};
      st.truncated = {201};
      st.invalid = {203};
      st.datagrams = 20;  // -1 dropped +1 duplicate
    } else {
      st.datagrams = 20;
    }
    s.streams.push_back(st);
  }
  s.foreign.push_back({"192.0.2.99", "239.17.0.1", 36001, {205, 207}});
  s.datagrams = 42;
  return s;
}

void put_be16(Bytes& b, std::size_t at, uint16_t v) {
  b[at] = std::byte(v >> 8);
  b[at + 1] = std::byte(v & 0xFF);
}

void put_be32(Bytes& b, std::size_t at, uint32_t v) {
  put_be16(b, at, static_cast<uint16_t>(v >> 16));
  put_be16(b, at + 2, static_cast<uint16_t>(v));
}

uint32_t addr(const char* text) {
  uint32_t a = 0;
  EXPECT_TRUE(capture::net::parse_ipv4(text, a)) << text;
  return a;
}

// Ethernet + IPv4 (IHL 5) + UDP around `payload`.
Bytes udp_frame(const char* src, const char* group, uint16_t port, const Bytes& payload) {
  Bytes f(14 + 20 + 8 + payload.size());
  const auto mac = capture::net::multicast_mac(addr(group));
  std::memcpy(f.data(), mac.data(), 6);
  put_be16(f, 12, 0x0800);
  f[14] = std::byte{0x45};
  put_be16(f, 16, static_cast<uint16_t>(20 + 8 + payload.size()));
  f[22] = std::byte{1};   // TTL
  f[23] = std::byte{17};  // UDP
  put_be32(f, 26, addr(src));
  put_be32(f, 30, addr(group));
  put_be16(f, 34, 40000);
  put_be16(f, 36, port);
  put_be16(f, 38, static_cast<uint16_t>(8 + payload.size()));
  std::memcpy(f.data() + 42, payload.data(), payload.size());
  return f;
}

// A CODIF frame written field by field from the test's parameters (not via the checker).
Bytes codif_frame(uint32_t antenna, uint64_t index, SentAs as) {
  capture::codif::Header h;
  h.layout = capture::codif::Layout::v3;
  h.sync = capture::codif::kSyncV3;
  h.version = 3;
  h.frame = static_cast<uint32_t>(index % 100);
  h.seconds = static_cast<uint32_t>(index / 100);
  h.epoch = 52;
  h.nbits = 8;
  h.period = 1;
  h.thread_id = static_cast<uint16_t>(10 + antenna);
  h.group_id = 3;
  h.station_id = static_cast<uint16_t>(('A' << 8) | 'T');
  h.nchan = 1;
  h.data_words = 1024;
  h.total_samples = 819200;
  h.invalid = as == SentAs::invalid;
  Bytes b(64 + 8192);
  capture::codif::encode(h, std::span<std::byte, 64>(b.data(), 64));
  tools::fill_pattern(antenna, index, 0, std::span(b).subspan(64));
  if (as == SentAs::bad_sync) b[40] ^= std::byte{0x5A};  // v3 sync: word 5, low 32 bits
  if (as == SentAs::truncated) b.resize(64 + 4000);
  return b;
}

// IGMPv3 report (IP header with the router-alert option, as Linux sends it) with records
// of (type, group).
Bytes igmp_v3(std::vector<std::pair<uint8_t, const char*>> records) {
  Bytes f(14 + 24 + 8 + 8 * records.size());
  put_be16(f, 12, 0x0800);
  f[14] = std::byte{0x46};
  put_be16(f, 16, static_cast<uint16_t>(f.size() - 14));
  f[22] = std::byte{1};
  f[23] = std::byte{2};  // IGMP
  put_be32(f, 26, addr("192.0.2.100"));
  put_be32(f, 30, addr("224.0.0.22"));
  put_be32(f, 34, 0x94040000);  // router alert
  f[38] = std::byte{0x22};
  put_be16(f, 44, static_cast<uint16_t>(records.size()));
  std::size_t at = 46;
  for (const auto& [type, group] : records) {
    f[at] = std::byte{type};
    put_be32(f, at + 4, addr(group));
    at += 8;
  }
  return f;
}

struct Sent {
  const char* src;
  uint32_t antenna;
  uint64_t index;
  SentAs as;
};

// What the generator puts on the wire for summary(), written out by hand, in send order.
std::vector<Sent> wire() {
  std::vector<Sent> out;
  for (uint64_t i = 190; i < 210; ++i) {
    const uint64_t a0 = i == 194 ? 195 : i == 195 ? 194 : i;
    SentAs as = SentAs::intact;
    if (a0 == 199) as = SentAs::bad_sync;
    if (a0 == 201) as = SentAs::truncated;
    if (a0 == 203) as = SentAs::invalid;
    if (a0 != 192) out.push_back({"192.0.2.11", 0, a0, as});
    if (a0 == 197) out.push_back({"192.0.2.11", 0, a0, as});
    if (a0 == 205 || a0 == 207) out.push_back({"192.0.2.99", 0, a0, SentAs::intact});
    out.push_back({"192.0.2.12", 1, i, SentAs::intact});
  }
  return out;
}

std::vector<Bytes> frames(const std::vector<Sent>& sent, bool with_igmp = true) {
  std::vector<Bytes> out;
  if (with_igmp) out.push_back(igmp_v3({{4, "239.17.0.1"}}));
  for (const auto& s : sent) {
    out.push_back(udp_frame(s.src, "239.17.0.1", 36001, codif_frame(s.antenna, s.index, s.as)));
  }
  return out;
}

CheckResult check(const std::vector<Bytes>& capture, tools::GenSummary s = summary()) {
  CaptureChecker c(std::move(s));
  for (const auto& f : capture)
    c.add_frame(f);
  return c.finish();
}

bool has_error(const CheckResult& r, const std::string& needle) {
  return std::any_of(r.errors.begin(), r.errors.end(),
                     [&](const std::string& e) { return e.find(needle) != std::string::npos; });
}

TEST(ExpectedSequence, FollowsEveryImpairment) {
  const auto seq = expected_sequence(summary().streams[0]);
  std::vector<uint64_t> idx;
  for (const auto& d : seq)
    idx.push_back(d.index);
  EXPECT_EQ(idx, (std::vector<uint64_t>{190, 191, 193, 195, 194, 196, 197, 197, 198, 199,
                                        200, 201, 202, 203, 204, 205, 206, 207, 208, 209}));
  EXPECT_EQ(seq[9].as, SentAs::bad_sync);
  EXPECT_EQ(seq[11].as, SentAs::truncated);
  EXPECT_EQ(seq[13].as, SentAs::invalid);
}

TEST(ExpectedSequence, RejectsTwoImpairmentsOnOneFrame) {
  auto s = summary().streams[0];
  s.invalid.push_back(195);  // 195 is already the partner of swap 194
  EXPECT_THROW(expected_sequence(s), std::invalid_argument);
}

TEST(IgmpJoinedGroups, ReadsV2AndV3Joins) {
  EXPECT_EQ(igmp_joined_groups(igmp_v3({{2, "239.17.0.1"}, {4, "239.17.0.2"}})),
            (std::vector<uint32_t>{addr("239.17.0.1"), addr("239.17.0.2")}));
  // CHANGE_TO_INCLUDE with no sources is a leave.
  EXPECT_TRUE(igmp_joined_groups(igmp_v3({{3, "239.17.0.1"}})).empty());
  Bytes v2 = igmp_v3({});
  v2[38] = std::byte{0x16};
  put_be32(v2, 42, addr("239.17.0.7"));
  EXPECT_EQ(igmp_joined_groups(v2), std::vector<uint32_t>{addr("239.17.0.7")});
}

TEST(CaptureChecker, FaithfulCapturePasses) {
  const auto r = check(frames(wire()));
  EXPECT_TRUE(r.ok()) << r.report();
  ASSERT_EQ(r.flows.size(), 3u);
  EXPECT_EQ(r.flows[0].received, 20u);
  EXPECT_EQ(r.flows[0].by_kind[static_cast<std::size_t>(SentAs::bad_sync)], 1u);
  EXPECT_EQ(r.flows[0].by_kind[static_cast<std::size_t>(SentAs::truncated)], 1u);
  EXPECT_EQ(r.flows[0].by_kind[static_cast<std::size_t>(SentAs::invalid)], 1u);
  EXPECT_EQ(r.flows[2].received, 2u);
  EXPECT_NE(r.report().find("OK"), std::string::npos);
}

TEST(CaptureChecker, ReportsAMissingDatagram) {
  auto sent = wire();
  sent.erase(std::find_if(sent.begin(), sent.end(),
                          [](const Sent& s) { return s.antenna == 1 && s.index == 204; }));
  const auto r = check(frames(sent));
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(has_error(r,
                        "192.0.2.12 (antenna 1): 1 sent datagram(s) missing from the "
                        "capture: 204(intact)"))
      << r.report();
}

TEST(CaptureChecker, ReportsAPayloadByte) {
  auto capture = frames(wire());
  capture[5][42 + 64 + 1000] ^= std::byte{1};
  const auto r = check(capture);
  EXPECT_TRUE(has_error(r, "payload byte 1000 differs")) << r.report();
}

TEST(CaptureChecker, ReportsAWrongHeaderField) {
  auto capture = frames(wire());
  capture[3][42 + 16] ^= std::byte{0x40};  // word 2: thread id
  const auto r = check(capture);
  EXPECT_TRUE(has_error(r, "thread_id: got")) << r.report();
}

TEST(CaptureChecker, ReportsASwapNotMade) {
  auto sent = wire();
  for (auto& s : sent) {
    if (s.antenna == 0 && (s.index == 194 || s.index == 195)) s.index ^= 1;  // 194 <-> 195
  }
  const auto r = check(frames(sent));
  EXPECT_TRUE(has_error(r,
                        "same datagrams in a different order: at position 3 got index 194, "
                        "expected 195"))
      << r.report();
}

TEST(CaptureChecker, ReportsATruncatedFrameSentWhole) {
  auto sent = wire();
  for (auto& s : sent) {
    if (s.index == 201 && s.antenna == 0) s.as = SentAs::intact;
  }
  const auto r = check(frames(sent));
  EXPECT_TRUE(has_error(r, "missing from the capture: 201(truncated)")) << r.report();
  EXPECT_TRUE(has_error(r, "the summary does not list: 201(intact)")) << r.report();
}

TEST(CaptureChecker, ReportsMissingIgmpAndStrangers) {
  auto capture = frames(wire(), false);
  capture.push_back(udp_frame("192.0.2.50", "239.17.0.1", 36001, codif_frame(0, 190, {})));
  const auto r = check(capture);
  EXPECT_TRUE(has_error(r,
                        "no IGMP membership report (v2 0x16 or v3 0x22 join) for group "
                        "239.17.0.1"))
      << r.report();
  EXPECT_TRUE(has_error(r, "192.0.2.50 -> 239.17.0.1:36001 belongs to no stream")) << r.report();
}

TEST(CaptureChecker, ReportsAnInconsistentSummary) {
  auto s = summary();
  s.streams[1].datagrams = 19;
  const auto r = check(frames(wire()), s);
  EXPECT_TRUE(has_error(r, "says 19 datagrams, its lists imply 20")) << r.report();
}

TEST(CaptureChecker, RefusesUnusableFrameParameters) {
  auto s = summary();
  s.frame.total_samples = 1000;  // not a whole number of 8192-sample frames
  EXPECT_THROW(CaptureChecker{s}, std::invalid_argument);
}

}  // namespace
}  // namespace rocecap::itest
