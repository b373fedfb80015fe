#include "capture/pcap/pcap_source.hpp"

#include <gtest/gtest.h>
#include <pcap/pcap.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "capture/ingest.hpp"

namespace rocecap::capture::pcap {
namespace {

// A UDP/IPv4 Ethernet frame to group:port, optionally under one 802.1Q tag.
std::vector<u_char> udp_frame(uint32_t group, uint16_t port, std::size_t payload, bool vlan) {
  std::vector<u_char> f = {0x01, 0x00, 0x5e, 0x11, 0x00, 0x01, 0x02, 0, 0, 0, 0, 1};
  if (vlan) f.insert(f.end(), {0x81, 0x00, 0x00, 0x07});
  const std::size_t ip_len = 20 + 8 + payload;
  f.insert(f.end(), {0x08,
                     0x00,
                     0x45,
                     0,
                     u_char(ip_len >> 8),
                     u_char(ip_len),
                     0,
                     0,
                     0x40,
                     0,
                     1,
                     17,
                     0,
                     0,
                     192,
                     0,
                     2,
                     11,
                     u_char(group >> 24),
                     u_char(group >> 16),
                     u_char(group >> 8),
                     u_char(group)});
  f.insert(f.end(), {0x9c, 0x40, u_char(port >> 8), u_char(port), u_char((8 + payload) >> 8),
                     u_char(8 + payload), 0, 0});
  for (std::size_t i = 0; i < payload; ++i)
    f.push_back(static_cast<u_char>(i * 7));
  return f;
}

struct Recorded {
  std::vector<std::vector<std::byte>> frames;
  std::vector<std::size_t> wire;
  std::vector<int64_t> ts;
};

struct RecordingSink final : FrameSink {
  Recorded r;
  void on_frame(std::span<const std::byte> captured, std::size_t wire_bytes,
                int64_t ts_ns) noexcept override {
    r.frames.emplace_back(captured.begin(), captured.end());
    r.wire.push_back(wire_bytes);
    r.ts.push_back(ts_ns);
  }
};

class PcapFile : public ::testing::Test {
 protected:
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("rocecap_pcap_source_" + std::to_string(getpid()) + ".pcap");
  void TearDown() override { std::filesystem::remove(path); }

  void write(const std::vector<std::vector<u_char>>& frames, const std::vector<int64_t>& ts_ns,
             int linktype = DLT_EN10MB) {
    pcap_t* dead =
        pcap_open_dead_with_tstamp_precision(linktype, 65535, PCAP_TSTAMP_PRECISION_NANO);
    pcap_dumper_t* d = pcap_dump_open(dead, path.c_str());
    ASSERT_NE(d, nullptr) << pcap_geterr(dead);
    for (std::size_t i = 0; i < frames.size(); ++i) {
      pcap_pkthdr h{};
      h.ts.tv_sec = ts_ns[i] / 1'000'000'000;
      h.ts.tv_usec = ts_ns[i] % 1'000'000'000;
      h.caplen = h.len = static_cast<bpf_u_int32>(frames[i].size());
      pcap_dump(reinterpret_cast<u_char*>(d), &h, frames[i].data());
    }
    pcap_dump_close(d);
    pcap_close(dead);
  }
};

// The PacketSource face (what rocecapd's capture loop sees): frames go to the attached Ingest,
// the end of the file is kEnd, and a capture error fails the source with its reason instead of
// throwing out of the capture thread.
TEST_F(PcapFile, AsAPacketSourceFeedsItsIngestThenEndsOrFailsWithTheReason) {
  const auto a = udp_frame(0xEF110001, 36001, 100, false);
  write({a, a, a}, {1, 2, 3});
  capture::Ingest ingest({}, false);  // no streams: every frame is counted as no_stream
  {
    PcapSource src = PcapSource::open_file(path, Pace::fast);
    src.attach(ingest);
    PacketSource& ps = src;
    EXPECT_TRUE(ps.replay());
    EXPECT_EQ(ps.poll(2), 2);
    EXPECT_EQ(ps.poll(10), 1);
    EXPECT_EQ(ps.poll(10), PacketSource::kEnd);
    EXPECT_FALSE(ps.failed());
    EXPECT_EQ(ps.failure(), "");
    EXPECT_EQ(ps.report().frames, 3u);
    EXPECT_EQ(ps.report().device, path.string());
    EXPECT_FALSE(ps.report().device_view);
    EXPECT_EQ(ps.nic_drops(), uint64_t{0});
  }
  EXPECT_EQ(ingest.frames_seen(), 3u);
  EXPECT_EQ(ingest.rejected(capture::kRejectNoStream), 3u);

  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 10);
  PcapSource cut = PcapSource::open_file(path, Pace::fast);
  cut.attach(ingest);
  PacketSource& ps = cut;
  EXPECT_EQ(ps.poll(10), PacketSource::kFailed);
  EXPECT_TRUE(ps.failed());
  EXPECT_NE(ps.failure().find("truncated"), std::string::npos) << ps.failure();
  EXPECT_NE(ps.failure().find(path.string()), std::string::npos) << ps.failure();
  EXPECT_EQ(ps.poll(10), PacketSource::kFailed) << "a failed source stays failed";
  EXPECT_EQ(ps.report().frames, 2u);  // the whole records before the cut
  EXPECT_EQ(ingest.frames_seen(), 5u);
}

TEST_F(PcapFile, ReplaysEveryFrameWithBytesLengthsAndNanosecondTimes) {
  const auto a = udp_frame(0xEF110001, 36001, 100, false);
  const auto b = udp_frame(0xEF110002, 36002, 8256, true);
  write({a, b}, {1'700'000'000'123'456'789, 1'700'000'000'123'456'790});
  PcapSource src = PcapSource::open_file(path, Pace::fast);
  RecordingSink sink;
  EXPECT_EQ(src.dispatch(sink, 1), 1);
  EXPECT_EQ(src.dispatch(sink, 10), 1);
  EXPECT_EQ(src.dispatch(sink, 10), -1);
  ASSERT_EQ(sink.r.frames.size(), 2u);
  EXPECT_EQ(0, std::memcmp(sink.r.frames[0].data(), a.data(), a.size()));
  EXPECT_EQ(0, std::memcmp(sink.r.frames[1].data(), b.data(), b.size()));
  EXPECT_EQ(sink.r.wire[1], b.size());
  EXPECT_EQ(sink.r.ts[0], 1'700'000'000'123'456'789);
  EXPECT_EQ(sink.r.ts[1], 1'700'000'000'123'456'790);
  EXPECT_EQ(src.stats().frames, 2u);
  EXPECT_FALSE(src.is_live());
}

TEST_F(PcapFile, RecordedPaceWaitsForTheRecordedGaps) {
  const auto a = udp_frame(0xEF110001, 36001, 10, false);
  write({a, a, a}, {1'000'000'000, 1'040'000'000, 1'080'000'000});  // 40 ms apart
  PcapSource src = PcapSource::open_file(path, Pace::recorded);
  RecordingSink sink;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(src.dispatch(sink, 10), 3);
  // A lower bound only: replay must not run ahead of the recording.
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(80));
}

// A gap in the recording is waited for in slices: dispatch returns (0 frames) so the capture
// loop sees a stop request, and the record not yet due is delivered by a later call, once.
// Before, one dispatch slept through the whole gap (an hour's gap ignored SIGTERM for an hour).
TEST_F(PcapFile, RecordedPaceGivesTheThreadBackDuringAGap) {
  const auto a = udp_frame(0xEF110001, 36001, 10, false);
  const auto b = udp_frame(0xEF110002, 36002, 20, false);
  write({a, b}, {1'000'000'000, 1'500'000'000});  // 500 ms apart: several slices
  PcapSource src = PcapSource::open_file(path, Pace::recorded);
  RecordingSink sink;
  EXPECT_EQ(src.dispatch(sink, 10), 1);  // the first, then a slice of the gap
  int empty_calls = 0, n = 0;
  while ((n = src.dispatch(sink, 10)) == 0 && empty_calls < 100)
    ++empty_calls;
  EXPECT_GE(empty_calls, 1);
  EXPECT_EQ(n, 1);
  EXPECT_EQ(src.dispatch(sink, 10), -1);
  ASSERT_EQ(sink.r.frames.size(), 2u);  // each once, in order
  EXPECT_EQ(sink.r.frames[1].size(), b.size());
  EXPECT_EQ(sink.r.ts[1], 1'500'000'000);
  EXPECT_EQ(src.stats().frames, 2u);
}

TEST_F(PcapFile, NonEthernetFileIsRefusedNamingThePath) {
  write({udp_frame(0xEF110001, 36001, 10, false)}, {0}, DLT_RAW);
  try {
    PcapSource::open_file(path, Pace::fast);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not Ethernet"), std::string::npos) << e.what();
  }
}

TEST_F(PcapFile, MissingFileIsAClearError) {
  try {
    PcapSource::open_file("/nonexistent/dir/x.pcap", Pace::fast);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/x.pcap"), std::string::npos);
  }
}

bool filter_passes(const std::string& expr, const std::vector<u_char>& frame) {
  pcap_t* dead = pcap_open_dead(DLT_EN10MB, 65535);
  bpf_program prog{};
  EXPECT_EQ(pcap_compile(dead, &prog, expr.c_str(), 1, PCAP_NETMASK_UNKNOWN), 0)
      << pcap_geterr(dead) << " in " << expr;
  pcap_pkthdr h{};
  h.caplen = h.len = static_cast<bpf_u_int32>(frame.size());
  const bool pass = pcap_offline_filter(&prog, &h, frame.data()) != 0;
  pcap_freecode(&prog);
  pcap_close(dead);
  return pass;
}

TEST(BuildFilter, PassesConfiguredGroupsTaggedOrNotAndNothingElse) {
  const std::string f = build_filter({{0xEF110001, 36001}, {0xEF110002, 36002}});
  EXPECT_TRUE(filter_passes(f, udp_frame(0xEF110001, 36001, 64, false)));
  EXPECT_TRUE(filter_passes(f, udp_frame(0xEF110002, 36002, 64, false)));
  EXPECT_TRUE(filter_passes(f, udp_frame(0xEF110002, 36002, 64, true)));
  EXPECT_FALSE(filter_passes(f, udp_frame(0xEF110001, 36002, 64, false)));  // wrong port
  EXPECT_FALSE(filter_passes(f, udp_frame(0xEF110003, 36001, 64, true)));   // other group
}

// Two tags (802.1ad outer, 802.1Q inner). libpcap's `vlan` shifts the offsets for the rest of
// the expression, across `or` too, so a double-tag branch after a single-tag one looked for a
// third tag and every QinQ frame of a configured stream was filtered out.
TEST(BuildFilter, PassesDoubleTaggedFramesOfConfiguredGroups) {
  const std::string f = build_filter({{0xEF110001, 36001}, {0xEF110002, 36002}});
  auto qinq = [](uint32_t group, uint16_t port) {
    std::vector<u_char> fr = udp_frame(group, port, 64, true);
    const u_char outer[] = {0x88, 0xa8, 0x00, 0x64};
    fr.insert(fr.begin() + 12, std::begin(outer), std::end(outer));
    return fr;
  };
  EXPECT_TRUE(filter_passes(f, qinq(0xEF110001, 36001)));
  EXPECT_TRUE(filter_passes(f, qinq(0xEF110002, 36002)));
  EXPECT_FALSE(filter_passes(f, qinq(0xEF110001, 36002)));
  EXPECT_TRUE(filter_passes(f, udp_frame(0xEF110001, 36001, 64, false)));
  EXPECT_TRUE(filter_passes(f, udp_frame(0xEF110001, 36001, 64, true)));
}

}  // namespace
}  // namespace rocecap::capture::pcap

namespace rocecap::capture::pcap {
namespace {

// A quiet interface must give the capture thread back within the timeout, or a run could never
// stop or flush (libpcap's immediate mode alone blocks until a packet arrives).
TEST(PcapLive, QuietInterfaceReturnsWithinTheTimeout) {
  if (geteuid() != 0) GTEST_SKIP() << "live capture needs CAP_NET_RAW (run as root)";
  LiveOptions o;
  o.interface = "lo";
  o.groups = {{0xEFFE2A09, 9}};  // nothing sends to 239.254.42.9:9 here
  o.timeout_ms = 50;
  o.buffer_bytes = 1 << 20;
  PcapSource src = PcapSource::open_live(o);
  EXPECT_TRUE(src.is_live());
  RecordingSink sink;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(src.dispatch(sink, 16), 0);
  // Generous bound: the defect this guards against blocks forever.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_TRUE(sink.r.frames.empty());
}

}  // namespace
}  // namespace rocecap::capture::pcap
