// pcap-file replay through PcapFileReader (capture/pcap/pcap_file_reader.hpp): both byte
// orders, both timestamp precisions, snaplen-cut records, records spanning read buffers, a file
// cut inside a record, and pcapng left to libpcap.
#include "capture/pcap/pcap_file_reader.hpp"

#include <gtest/gtest.h>
#include <pcap/pcap.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "capture/pcap/pcap_source.hpp"

namespace rocecap::capture::pcap {
namespace {

std::vector<u_char> frame(std::size_t n, u_char seed) {
  std::vector<u_char> f(n);
  for (std::size_t i = 0; i < n; ++i)
    f[i] = static_cast<u_char>(seed + i * 13);
  return f;
}

struct Sink final : FrameSink {
  std::vector<std::vector<std::byte>> frames;
  std::vector<std::size_t> wire;
  std::vector<int64_t> ts;
  void on_frame(std::span<const std::byte> captured, std::size_t wire_bytes,
                int64_t timestamp_ns) noexcept override {
    frames.emplace_back(captured.begin(), captured.end());
    wire.push_back(wire_bytes);
    ts.push_back(timestamp_ns);
  }
};

bool same(const std::vector<std::byte>& got, const std::vector<u_char>& want) {
  return got.size() == want.size() && std::memcmp(got.data(), want.data(), want.size()) == 0;
}

class PcapFileReaderTest : public ::testing::Test {
 protected:
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("rocecap_pcap_file_reader_" + std::to_string(getpid()) + ".pcap");
  void TearDown() override { std::filesystem::remove(path); }

  // Written by libpcap itself, in host byte order. `caplen` < frame size cuts the record.
  void write_with_libpcap(const std::vector<std::vector<u_char>>& frames,
                          const std::vector<int64_t>& ts_ns, u_int precision,
                          std::size_t caplen = 65535) {
    pcap_t* dead = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 65535, precision);
    pcap_dumper_t* d = pcap_dump_open(dead, path.c_str());
    ASSERT_NE(d, nullptr) << pcap_geterr(dead);
    const int64_t unit = precision == PCAP_TSTAMP_PRECISION_NANO ? 1 : 1000;
    for (std::size_t i = 0; i < frames.size(); ++i) {
      pcap_pkthdr h{};
      h.ts.tv_sec = ts_ns[i] / 1'000'000'000;
      h.ts.tv_usec = ts_ns[i] % 1'000'000'000 / unit;
      h.len = static_cast<bpf_u_int32>(frames[i].size());
      h.caplen = static_cast<bpf_u_int32>(std::min(caplen, frames[i].size()));
      pcap_dump(reinterpret_cast<u_char*>(d), &h, frames[i].data());
    }
    pcap_dump_close(d);
    pcap_close(dead);
  }

  void write_bytes(const std::vector<u_char>& bytes) {
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  }
};

void put_be32(std::vector<u_char>& out, uint32_t v) {
  out.insert(out.end(), {u_char(v >> 24), u_char(v >> 16), u_char(v >> 8), u_char(v)});
}

TEST_F(PcapFileReaderTest, MicrosecondFileReplaysBytesLengthsAndTimesInNanoseconds) {
  const auto a = frame(60, 1), b = frame(8298, 2);
  write_with_libpcap({a, b}, {1'700'000'000'123'456'000, 1'700'000'001'000'001'000},
                     PCAP_TSTAMP_PRECISION_MICRO);
  ASSERT_TRUE(PcapFileReader::open(path).has_value());
  PcapSource src = PcapSource::open_file(path, Pace::fast);
  Sink sink;
  EXPECT_EQ(src.dispatch(sink, 10), 2);
  EXPECT_EQ(src.dispatch(sink, 10), -1);
  ASSERT_EQ(sink.frames.size(), 2u);
  EXPECT_TRUE(same(sink.frames[0], a));
  EXPECT_TRUE(same(sink.frames[1], b));
  EXPECT_EQ(sink.wire[1], 8298u);
  EXPECT_EQ(sink.ts[0], 1'700'000'000'123'456'000);
  EXPECT_EQ(sink.ts[1], 1'700'000'001'000'001'000);
  EXPECT_EQ(src.stats().frames, 2u);
}

TEST_F(PcapFileReaderTest, RecordsAcrossManyReadBuffersComeOutWhole) {
  // Sizes that do not divide the buffer, so records straddle every refill.
  std::vector<std::vector<u_char>> frames;
  std::vector<int64_t> ts;
  for (std::size_t i = 0; i < 400; ++i) {
    frames.push_back(frame(i % 2 == 0 ? 8298 : 1000 + i, static_cast<u_char>(i)));
    ts.push_back(1'000'000'000 + static_cast<int64_t>(i));
  }
  write_with_libpcap(frames, ts, PCAP_TSTAMP_PRECISION_NANO);
  ASSERT_GT(std::filesystem::file_size(path), 3 * PcapFileReader::kBufferBytes);
  PcapSource src = PcapSource::open_file(path, Pace::fast);
  Sink sink;
  while (src.dispatch(sink, 7) >= 0) {
  }
  ASSERT_EQ(sink.frames.size(), frames.size());
  for (std::size_t i = 0; i < frames.size(); ++i) {
    EXPECT_TRUE(same(sink.frames[i], frames[i])) << "frame " << i;
    EXPECT_EQ(sink.ts[i], ts[i]) << "frame " << i;
  }
}

TEST_F(PcapFileReaderTest, SnaplenCutRecordReportsWireLengthAndCountsTruncation) {
  const auto a = frame(200, 3);
  write_with_libpcap({a}, {5'000'000'007}, PCAP_TSTAMP_PRECISION_NANO, 128);
  PcapSource src = PcapSource::open_file(path, Pace::fast);
  Sink sink;
  EXPECT_EQ(src.dispatch(sink, 10), 1);
  ASSERT_EQ(sink.frames.size(), 1u);
  EXPECT_TRUE(same(sink.frames[0], std::vector<u_char>(a.begin(), a.begin() + 128)));
  EXPECT_EQ(sink.wire[0], 200u);
  EXPECT_EQ(sink.ts[0], 5'000'000'007);
  EXPECT_EQ(src.stats().truncated, 1u);
}

TEST_F(PcapFileReaderTest, BigEndianFileIsReadInItsByteOrder) {
  std::vector<u_char> f;
  put_be32(f, 0xa1b23c4d);  // nanosecond magic, big-endian
  f.insert(f.end(), {0, 2, 0, 4});
  put_be32(f, 0);
  put_be32(f, 0);
  put_be32(f, 65535);
  put_be32(f, 1);  // DLT_EN10MB
  const auto a = frame(70, 9);
  put_be32(f, 42);
  put_be32(f, 999'999'999);
  put_be32(f, 70);
  put_be32(f, 1500);
  f.insert(f.end(), a.begin(), a.end());
  write_bytes(f);
  PcapSource src = PcapSource::open_file(path, Pace::fast);
  Sink sink;
  EXPECT_EQ(src.dispatch(sink, 10), 1);
  EXPECT_EQ(src.dispatch(sink, 10), -1);
  ASSERT_EQ(sink.frames.size(), 1u);
  EXPECT_TRUE(same(sink.frames[0], a));
  EXPECT_EQ(sink.wire[0], 1500u);
  EXPECT_EQ(sink.ts[0], 42'999'999'999);
}

TEST_F(PcapFileReaderTest, FileCutInsideARecordIsAnErrorNamingThePathAfterTheWholeRecords) {
  write_with_libpcap({frame(100, 1), frame(100, 2)}, {1, 2}, PCAP_TSTAMP_PRECISION_NANO);
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 10);
  PcapSource src = PcapSource::open_file(path, Pace::fast);
  Sink sink;
  try {
    src.dispatch(sink, 10);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
  EXPECT_EQ(sink.frames.size(), 1u);
}

TEST_F(PcapFileReaderTest, PcapngIsLeftToLibpcap) {
  std::vector<u_char> f = {0x0a, 0x0d, 0x0d, 0x0a};
  f.resize(64, 0);
  write_bytes(f);
  EXPECT_FALSE(PcapFileReader::open(path).has_value());
  EXPECT_FALSE(PcapFileReader::open("/nonexistent/dir/x.pcap").has_value());
}

}  // namespace
}  // namespace rocecap::capture::pcap
