// pcap output read back with libpcap in nanosecond mode: every record's timestamp, lengths and
// bytes, snaplen cuts, and rotation into files that each stand alone.
#include <gtest/gtest.h>
#include <pcap/pcap.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "writer_test_util.hpp"
#include "writers/pcap_writer.hpp"

namespace rocecap::writers {
namespace {

using test::Bytes;

struct Packet {
  int64_t ns;
  Bytes head, tail;
  uint32_t wire_len = 0;
};

struct Record {
  int64_t sec, nsec;
  uint32_t caplen, len;
  Bytes bytes;
};

struct Readback {
  int datalink = -1;
  int snaplen = -1;
  std::vector<Record> records;
  std::string error;
};

Readback read_pcap(const std::filesystem::path& path) {
  Readback r;
  char errbuf[PCAP_ERRBUF_SIZE] = {};
  pcap_t* p =
      pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, errbuf);
  if (p == nullptr) {
    r.error = errbuf;
    return r;
  }
  r.datalink = pcap_datalink(p);
  r.snaplen = pcap_snapshot(p);
  pcap_pkthdr* h = nullptr;
  const u_char* data = nullptr;
  int rc;
  while ((rc = pcap_next_ex(p, &h, &data)) == 1) {
    const auto* b = reinterpret_cast<const std::byte*>(data);
    r.records.push_back({h->ts.tv_sec, h->ts.tv_usec, h->caplen, h->len, Bytes(b, b + h->caplen)});
  }
  if (rc != PCAP_ERROR_BREAK) r.error = pcap_geterr(p);
  pcap_close(p);
  return r;
}

RotationOptions rotation(uint64_t max_bytes) {
  RotationOptions o;
  o.max_bytes = max_bytes;
  o.buffer_bytes = 4096;
  return o;
}

std::vector<Packet> packets() {
  // Split-capture shape: 106 bytes of Ethernet/IPv4/UDP/CODIF header in the header slot, the
  // data in the payload slot; one small packet with no payload piece.
  return {{1'700'000'000'123'456'789, test::pattern(106, 1), test::pattern(8192, 2)},
          {1'700'000'000'999'999'999, test::pattern(106, 3), test::pattern(512, 4)},
          {1'700'000'001'000'000'000, test::pattern(60, 5), {}},
          {5, test::pattern(106, 6), test::pattern(1, 7)},
          {-1, test::pattern(70, 8), test::pattern(30, 9)}};
}

Bytes joined(const Packet& p) {
  Bytes b = p.head;
  test::append(b, p.tail);
  return b;
}

void expect_record(const Record& r, const Packet& p, std::size_t snaplen = SIZE_MAX) {
  const int64_t ns = p.ns < 0 ? 0 : p.ns;
  EXPECT_EQ(r.sec, ns / 1'000'000'000);
  EXPECT_EQ(r.nsec, ns % 1'000'000'000);
  const Bytes all = joined(p);
  const std::size_t cap = std::min(all.size(), snaplen);
  EXPECT_EQ(r.caplen, cap);
  EXPECT_EQ(r.len, p.wire_len != 0 ? p.wire_len : all.size());
  EXPECT_EQ(r.bytes, Bytes(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(cap)));
}

TEST(PcapWriter, LibpcapReadsEveryRecordBackInNanoseconds) {
  test::TempDir dir;
  PcapWriter w(test::simple_paths(dir.path()), rotation(0));
  const auto in = packets();
  for (const Packet& p : in)
    ASSERT_TRUE(w.write_packet(p.ns, p.head, p.tail).ok());
  ASSERT_TRUE(w.close().ok());

  const auto path = dir.path() / "f.0";
  const Readback r = read_pcap(path);
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.datalink, DLT_EN10MB);
  EXPECT_EQ(r.snaplen, 262144);
  ASSERT_EQ(r.records.size(), in.size());
  std::size_t size = kPcapFileHeaderBytes;
  for (std::size_t i = 0; i < in.size(); ++i) {
    SCOPED_TRACE(i);
    expect_record(r.records[i], in[i]);
    size += kPcapRecordHeaderBytes + joined(in[i]).size();
  }
  EXPECT_EQ(std::filesystem::file_size(path), size);
  EXPECT_EQ(w.stats().bytes_written, size);
  EXPECT_EQ(w.stats().frames_written, in.size());
  ASSERT_EQ(w.files().size(), 1u);
  EXPECT_EQ(w.files()[0].bytes, size);
  EXPECT_EQ(w.files()[0].records, in.size());
}

TEST(PcapWriter, FileStartsWithTheNanosecondMagic) {
  test::TempDir dir;
  PcapWriter w(test::simple_paths(dir.path()), rotation(0));
  ASSERT_TRUE(w.write_packet(1, test::pattern(60, 1)).ok());
  ASSERT_TRUE(w.close().ok());
  const Bytes f = test::read_file(dir.path() / "f.0");
  ASSERT_GE(f.size(), 24u);
  uint32_t magic = 0;
  std::memcpy(&magic, f.data(), 4);
  EXPECT_EQ(magic, 0xa1b23c4du);
}

TEST(PcapWriter, SnaplenCutsRecordsAndKeepsTheWireLength) {
  test::TempDir dir;
  PcapOptions opts;
  opts.snaplen = 200;
  PcapWriter w(test::simple_paths(dir.path()), rotation(0), opts);
  std::vector<Packet> in = {{10, test::pattern(106, 1), test::pattern(512, 2)},  // cut in tail
                            {20, test::pattern(300, 3), test::pattern(512, 4)},  // cut in head
                            {30, test::pattern(106, 5), test::pattern(94, 6)},   // exactly 200
                            {40, test::pattern(106, 7), test::pattern(10, 8), 9000}};  // wire len
  for (const Packet& p : in)
    ASSERT_TRUE(w.write_packet(p.ns, p.head, p.tail, p.wire_len).ok());
  ASSERT_TRUE(w.close().ok());
  const Readback r = read_pcap(dir.path() / "f.0");
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.snaplen, 200);
  ASSERT_EQ(r.records.size(), in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    SCOPED_TRACE(i);
    expect_record(r.records[i], in[i], 200);
  }
}

TEST(PcapWriter, RotatedFilesEachStartWithAFileHeader) {
  test::TempDir dir;
  const auto in = packets();
  // Room for the file header and the first two packets of the list (8298 + 618 bytes).
  const uint64_t max = kPcapFileHeaderBytes + 2 * kPcapRecordHeaderBytes + 8298 + 618;
  PcapWriter w(test::simple_paths(dir.path()), rotation(max));
  for (const Packet& p : in)
    ASSERT_TRUE(w.write_packet(p.ns, p.head, p.tail).ok());
  ASSERT_TRUE(w.close().ok());

  const std::size_t per_file[] = {2, 3};
  ASSERT_EQ(w.files().size(), 2u);
  std::size_t next = 0;
  for (std::size_t f = 0; f < 2; ++f) {
    SCOPED_TRACE(f);
    const Readback r = read_pcap(w.files()[f].path);
    ASSERT_EQ(r.error, "");
    ASSERT_EQ(r.records.size(), per_file[f]);
    std::size_t size = kPcapFileHeaderBytes;
    for (const Record& rec : r.records) {
      expect_record(rec, in[next]);
      size += kPcapRecordHeaderBytes + joined(in[next++]).size();
    }
    EXPECT_EQ(w.files()[f].bytes, size);
    EXPECT_EQ(std::filesystem::file_size(w.files()[f].path), size);
  }
}

}  // namespace
}  // namespace rocecap::writers
