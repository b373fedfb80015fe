#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>

#include "capture/net/packet.hpp"
#include "tools/lib/gen_engine.hpp"
#include "tools/lib/gen_sinks.hpp"
#include "tools/lib/inspect.hpp"
#include "tools/lib/udp_frame.hpp"

namespace rocecap::tools {
namespace {

uint32_t ip(const char* text) {
  uint32_t v = 0;
  EXPECT_TRUE(capture::net::parse_ipv4(text, v));
  return v;
}

GenFrameParams frames() {
  GenFrameParams p;
  p.payload_bytes = 512;
  p.total_samples = 0;
  p.start_seconds = 20;
  p.thread_id = 4;
  p.station = "PK";
  return p;
}

class InspectFile : public ::testing::Test {
 protected:
  std::filesystem::path dir_ =
      std::filesystem::temp_directory_path() / ("inspect_file_test_" + std::to_string(::getpid()));
  void SetUp() override { std::filesystem::create_directories(dir_); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  GenSummary generate(const std::string& name, const GenSetup& s,
                      const GenFrameParams& params = frames()) {
    const FrameBuilder b(params);
    std::vector<uint32_t> senders = s.sources;
    if (s.foreign) senders.push_back(*s.foreign);
    PcapSink sink((dir_ / name).string(), senders, 1'800'000'000'000'000'000, 1);
    std::atomic<bool> stop{false};
    GenSummary sum;
    run_generator(s, b, sink, stop, sum);
    sink.finish();
    return sum;
  }
};

GenSetup impaired_setup() {
  GenSetup s;
  s.groups = {{ip("239.17.0.1"), 36001}, {ip("239.17.0.2"), 36002}};
  s.sources = {ip("192.0.2.11"), ip("192.0.2.12")};
  s.foreign = ip("192.0.2.200");
  s.frames_per_stream = 600;
  s.seed = 99;
  s.rates.drop_every = 50;
  s.rates.drop = 0.03;
  s.rates.swap = 0.03;
  s.rates.duplicate = 0.03;
  s.rates.bad_sync = 0.03;
  s.rates.truncate = 0.03;
  s.rates.invalid = 0.03;
  s.rates.foreign = 0.03;
  return s;
}

// The gaps a receiver must see: runs of lost indices strictly between the first and last
// frame that arrived intact.
std::vector<std::pair<uint64_t, uint64_t>> expected_gaps(const GenStream& g) {
  std::set<uint64_t> lost(g.dropped.begin(), g.dropped.end());
  lost.insert(g.bad_sync.begin(), g.bad_sync.end());
  lost.insert(g.truncated.begin(), g.truncated.end());
  uint64_t first = g.first_index, last = g.first_index + g.frames - 1;
  while (lost.count(first))
    ++first;
  while (lost.count(last))
    --last;
  std::vector<std::pair<uint64_t, uint64_t>> gaps;
  for (uint64_t i = first; i <= last; ++i) {
    if (!lost.count(i)) continue;
    if (!gaps.empty() && gaps.back().first + gaps.back().second == i) {
      ++gaps.back().second;
    } else {
      gaps.emplace_back(i, 1);
    }
  }
  return gaps;
}

// VDIF threads 0 and 3 of one flow (rocecap gen --format vdif --threads 0,3), impaired.
GenFrameParams vdif_frames(bool vtp) {
  GenFrameParams p = frames();
  p.format = "vdif";
  p.frames_per_second = 100;
  p.payload_bytes = 256;
  p.threads = {0, 3};
  p.vtp = vtp;
  return p;
}

GenSetup vdif_setup() {
  GenSetup s = impaired_setup();
  s.groups.resize(1);
  s.sources.resize(1);
  s.foreign.reset();
  s.rates.foreign = 0;
  s.frames_per_stream = 300;
  return s;
}

// Each generated VDIF thread stream is found in the pcap with exactly its frames, copies,
// invalid frames, gaps and the frames whose length field lies (`bad_sync`, `truncated`).
void expect_vdif_streams(const InspectReport& r, const GenSummary& sum) {
  EXPECT_EQ(r.format, "pcap");
  ASSERT_EQ(r.streams.size(), sum.streams.size());
  for (const GenStream& g : sum.streams) {
    const InspectStream* s = nullptr;
    for (const InspectStream& x : r.streams)
      if (x.thread_id == g.thread) s = &x;
    ASSERT_NE(s, nullptr) << "thread " << g.thread;
    EXPECT_EQ(s->group, g.group);
    EXPECT_EQ(s->source, g.source);
    EXPECT_EQ(s->records, g.datagrams);
    EXPECT_EQ(s->duplicates, g.duplicated.size());
    EXPECT_EQ(s->invalid, g.invalid.size());
    EXPECT_EQ(s->gaps, expected_gaps(g)) << "thread " << g.thread;
    const uint64_t lying = g.bad_sync.size() + g.truncated.size();
    ASSERT_GT(lying, 0u);
    EXPECT_EQ(s->rejected, (std::map<std::string, uint64_t>{{"vdif_size_mismatch", lying}}));
  }
}

// A pcap of VDIF datagrams was read as CODIF (every record bad_sync) and with --vdif as a raw
// VDIF file (one partial frame). Now --vdif reads its datagrams as VDIF, and without --vdif it
// says that they are VDIF.
TEST_F(InspectFile, PcapOfVdifIsReadAsVdifOrNamedAsSuch) {
  const GenSummary sum = generate("vdif.pcap", vdif_setup(), vdif_frames(false));
  const std::string path = (dir_ / "vdif.pcap").string();
  try {
    (void)inspect_file(path);
    ADD_FAILURE() << "a pcap of VDIF read as CODIF without a word";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(": its UDP payloads are VDIF frames ("), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("not CODIF: give --vdif FPS"), std::string::npos)
        << e.what();
  }
  expect_vdif_streams(inspect_file(path, 100), sum);
}

// With VTP sequence numbers in front (--vtp): the error says so too, and --vtp skips them.
TEST_F(InspectFile, PcapOfVdifWithVtpNeedsVtp) {
  const GenSummary sum = generate("vtp.pcap", vdif_setup(), vdif_frames(true));
  const std::string path = (dir_ / "vtp.pcap").string();
  EXPECT_THROW(
      {
        try {
          (void)inspect_file(path);
        } catch (const std::runtime_error& e) {
          EXPECT_NE(std::string(e.what()).find("and --vtp (each starts with an 8-byte VTP"),
                    std::string::npos)
              << e.what();
          throw;
        }
      },
      std::runtime_error);
  const InspectReport r = inspect_file(path, 100, true);
  EXPECT_EQ(r.payload, "vdif");
  expect_vdif_streams(r, sum);
  // Without --vtp the number is taken for the header: the records are refused with reasons
  // (a few may pass by coincidence: VDIF has no sync word).
  uint64_t frames = 0, refused = 0;
  for (const InspectStream& s : inspect_file(path, 100).streams) {
    frames += s.frames;
    for (const auto& [why, n] : s.rejected)
      refused += n;
  }
  EXPECT_GT(refused, 10 * frames);
}

TEST_F(InspectFile, FindsExactlyWhatTheGeneratorSummaryLists) {
  const GenSummary sum = generate("impaired.pcap", impaired_setup());
  const InspectReport r = inspect_file((dir_ / "impaired.pcap").string());
  EXPECT_EQ(r.format, "pcap");
  EXPECT_EQ(r.precision, "ns");
  EXPECT_EQ(r.records, sum.datagrams);
  EXPECT_TRUE(r.rejected.empty());
  ASSERT_EQ(r.streams.size(), 4u + 2u);  // 2 groups x 2 sources, plus the foreign source twice

  for (const GenStream& g : sum.streams) {
    const auto it = std::find_if(r.streams.begin(), r.streams.end(), [&](const InspectStream& s) {
      return s.group == g.group && s.port == g.port && s.source == g.source;
    });
    ASSERT_NE(it, r.streams.end()) << g.group << " " << g.source;
    const InspectStream& s = *it;
    SCOPED_TRACE(g.group + " <- " + g.source);
    EXPECT_EQ(s.records, g.datagrams);
    EXPECT_EQ(s.duplicates, g.duplicated.size());
    EXPECT_EQ(s.invalid, g.invalid.size());
    EXPECT_EQ(s.late, g.swapped.size());
    const uint64_t bad = g.bad_sync.size(), cut = g.truncated.size();
    EXPECT_EQ(s.rejected.count("bad_sync") ? s.rejected.at("bad_sync") : 0, bad);
    EXPECT_EQ(s.rejected.count("size_mismatch") ? s.rejected.at("size_mismatch") : 0, cut);
    EXPECT_EQ(s.frames, g.datagrams - bad - cut);
    EXPECT_EQ(s.gaps, expected_gaps(g));
    EXPECT_FALSE(s.gaps.empty());
    ASSERT_TRUE(s.first_header.has_value());
    EXPECT_EQ(s.first_header->thread_id, 4 + g.antenna);
    EXPECT_EQ(s.first_header->station_id, capture::codif::station_id('P', 'K'));
    EXPECT_EQ(s.timing.frames_per_period, 10000u);
  }
  for (const GenForeign& f : sum.foreign) {
    const auto it = std::find_if(r.streams.begin(), r.streams.end(), [&](const InspectStream& s) {
      return s.group == f.group && s.source == f.source;
    });
    ASSERT_NE(it, r.streams.end());
    EXPECT_EQ(it->frames, f.indices.size());
    EXPECT_EQ(it->first_index, f.indices.front());
    EXPECT_EQ(it->last_index, f.indices.back());
  }

  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["records"], sum.datagrams);
  EXPECT_EQ(j["streams"][0]["first_header"]["station"], "PK");
}

TEST_F(InspectFile, CleanRunHasNoGapsAndTheFirstFrameTime) {
  GenSetup s = impaired_setup();
  s.rates = ImpairmentRates{};
  s.foreign.reset();
  s.frames_per_stream = 100;
  const GenSummary sum = generate("clean.pcap", s);
  const InspectReport r = inspect_file((dir_ / "clean.pcap").string());
  ASSERT_EQ(r.streams.size(), 4u);
  for (const auto& st : r.streams) {
    EXPECT_EQ(st.frames, 100u);
    EXPECT_EQ(st.first_index, 20u * 10000);  // start_seconds 20, period 1
    EXPECT_EQ(st.last_index, 20u * 10000 + 99);
    EXPECT_TRUE(st.gaps.empty());
    EXPECT_EQ(st.duplicates + st.late + st.invalid, 0u);
    // Epoch 0 is 2000-01-01 (unix 946684800); frame 99 starts 99 x 100 us later.
    EXPECT_EQ(st.first_time_ns, (946684800LL + 20) * 1'000'000'000);
    EXPECT_EQ(st.last_time_ns, (946684800LL + 20) * 1'000'000'000 + 99 * 100'000);
  }
  EXPECT_EQ(sum.datagrams, 400u);
}

TEST_F(InspectFile, MicrosecondPcapIsRead) {
  GenSetup s = impaired_setup();
  s.rates = ImpairmentRates{};
  s.foreign.reset();
  s.frames_per_stream = 10;
  generate("us.pcap", s);
  {  // rewrite the magic: the record layout of both precisions is the same
    std::fstream f(dir_ / "us.pcap", std::ios::in | std::ios::out | std::ios::binary);
    const unsigned char magic[4] = {0xd4, 0xc3, 0xb2, 0xa1};
    f.write(reinterpret_cast<const char*>(magic), 4);
  }
  const InspectReport r = inspect_file((dir_ / "us.pcap").string());
  EXPECT_EQ(r.precision, "us");
  EXPECT_EQ(r.records, 40u);
}

TEST_F(InspectFile, RawCodifFileGroupsByHeaderIds) {
  const FrameBuilder b(frames());
  std::vector<std::byte> file;
  auto add = [&](uint32_t antenna, uint64_t offset, Fate fate) {
    std::vector<std::byte> f(b.frame_bytes());
    b.build(antenna, b.first_index() + offset, fate, f);
    file.insert(file.end(), f.begin(), f.end());
  };
  for (uint64_t i = 0; i < 20; ++i) {
    add(1, i, Fate::plain);
    if (i == 5 || i == 6) continue;  // a gap of two in antenna 0
    add(0, i, i == 9 ? Fate::invalid : Fate::plain);
  }
  add(1, 3, Fate::plain);          // a late duplicate
  add(0, 30, Fate::bad_sync);      // unreadable frame: counted, not a stream
  file.resize(file.size() + 100);  // a partial frame at the end
  {
    std::ofstream out(dir_ / "raw.codif", std::ios::binary);
    out.write(reinterpret_cast<const char*>(file.data()),
              static_cast<std::streamsize>(file.size()));
  }
  const InspectReport r = inspect_file((dir_ / "raw.codif").string());
  EXPECT_EQ(r.format, "codif");
  EXPECT_EQ(r.rejected.at("bad_sync"), 1u);
  EXPECT_EQ(r.rejected.at("partial_frame"), 1u);
  ASSERT_EQ(r.streams.size(), 2u);  // in order of first appearance: antenna 1 first
  const InspectStream& a1 = r.streams[0];
  const InspectStream& a0 = r.streams[1];
  EXPECT_EQ(a0.thread_id, 4);
  EXPECT_EQ(a0.frames, 18u);
  EXPECT_EQ(a0.invalid, 1u);
  EXPECT_EQ(a0.gaps, (std::vector<std::pair<uint64_t, uint64_t>>{{b.first_index() + 5, 2}}));
  EXPECT_EQ(a0.missing, 2u);
  EXPECT_EQ(a1.thread_id, 5);
  EXPECT_EQ(a1.frames, 21u);
  EXPECT_EQ(a1.unique_frames, 20u);
  EXPECT_EQ(a1.duplicates, 1u);
  EXPECT_EQ(a1.late, 1u);
  EXPECT_TRUE(a1.gaps.empty());
}

// A pcap image built by hand: records of any length, captured length independent of the
// length on the wire.
struct PcapImage {
  std::vector<std::byte> bytes;
  PcapImage() {
    const uint32_t h[6] = {kPcapMagicNanos, 2 | (4u << 16), 0, 0, kPcapSnaplen, 1};
    append(h, sizeof h);
  }
  void append(const void* p, std::size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    bytes.insert(bytes.end(), b, b + n);
  }
  void record(std::span<const std::byte> frame, uint32_t captured) {
    const uint32_t r[4] = {1, 0, captured, static_cast<uint32_t>(frame.size())};
    append(r, sizeof r);
    append(frame.data(), captured);
  }
};

TEST(InspectPcapBytes, CountsNonUdpAndSnappedRecords) {
  if (std::endian::native != std::endian::little) GTEST_SKIP() << "image written natively";
  const FrameBuilder b(frames());
  std::vector<std::byte> frame(kEthIpv4UdpBytes + b.frame_bytes());
  const auto payload = std::span<std::byte>(frame).subspan(kEthIpv4UdpBytes);
  b.build(0, b.first_index(), Fate::plain, payload);
  write_udp_headers(UdpEndpoints{ip("192.0.2.11"), ip("239.17.0.1"), 5000, 36001}, 1, 1, payload,
                    std::span<std::byte, kEthIpv4UdpBytes>(frame.data(), kEthIpv4UdpBytes));
  PcapImage img;
  img.record(frame, static_cast<uint32_t>(frame.size()));
  img.record(frame, 100);  // snapped: headers there, CODIF frame cut
  std::vector<std::byte> arp(frame.begin(), frame.begin() + 60);
  arp[12] = std::byte{0x08};
  arp[13] = std::byte{0x06};
  img.record(arp, 60);

  const InspectReport r = inspect_pcap_bytes(img.bytes, "image");
  EXPECT_EQ(r.records, 3u);
  EXPECT_EQ(r.rejected, (std::map<std::string, uint64_t>{{"not_ipv4", 1}}));
  ASSERT_EQ(r.streams.size(), 1u);
  EXPECT_EQ(r.streams[0].records, 2u);
  EXPECT_EQ(r.streams[0].frames, 1u);
  EXPECT_EQ(r.streams[0].rejected, (std::map<std::string, uint64_t>{{"snapped", 1}}));

  std::vector<std::byte> cut(img.bytes.begin(), img.bytes.end() - 10);
  try {
    inspect_pcap_bytes(cut, "cut.pcap");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cut.pcap: record at offset"), std::string::npos)
        << e.what();
  }
}

TEST_F(InspectFile, NeitherPcapNorCodifIsAClearError) {
  {
    std::ofstream out(dir_ / "junk.bin");
    out << std::string(200, 'x');
  }
  try {
    inspect_file((dir_ / "junk.bin").string());
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("junk.bin"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("neither a pcap file nor a CODIF file"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace rocecap::tools
