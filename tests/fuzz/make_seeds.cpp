// Writes the seed corpora of the fuzz targets: a few valid frames of every shape the parsers
// know, built with the real encoders. Usage: fuzz_make_seeds <dir>; creates <dir>/<target>/seeds
// and the empty <dir>/<target>/work that libFuzzer fills.
#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "capture/codif/header.hpp"
#include "capture/net/udp_builder.hpp"
#include "capture/vdif/header.hpp"

namespace fs = std::filesystem;
using namespace rocecap;

namespace {

using Bytes = std::vector<std::byte>;

bool write(const fs::path& file, const Bytes& b) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  return static_cast<bool>(out);
}

capture::codif::Header small(capture::codif::Layout layout, uint32_t sync) {
  capture::codif::Header h;
  h.layout = layout;
  h.sync = sync;
  h.version = layout == capture::codif::Layout::v3 ? 3 : 1;
  h.epoch = 40;
  h.nbits = 16;
  h.complex = true;
  h.nchan = 4;
  h.data_words = 16;  // 128 bytes = 8 samples of 4 complex 16-bit channels
  h.period = 27;
  h.total_samples = 8 * 1000;
  h.seconds = 27 * 5;
  h.frame = 999;
  h.station_id = capture::codif::station_id('A', 'T');
  return h;
}

Bytes codif_payload(const capture::codif::Header& h) {
  Bytes p(static_cast<std::size_t>(h.frame_bytes()));
  capture::codif::encode(h, std::span<std::byte, capture::codif::kHeaderBytes>(
                                p.data(), capture::codif::kHeaderBytes));
  return p;
}

Bytes udp_frame(uint8_t vlans, uint8_t option_words, const Bytes& payload, uint16_t split) {
  capture::net::UdpFrameSpec s;
  s.dst_mac = capture::net::multicast_mac(0xEF110001);
  s.vlan_count = vlans;
  s.vlans[0] = {capture::net::kEtherTypeQinQ, 100};
  s.vlans[1] = {capture::net::kEtherTypeVlan, 200};
  s.ip_option_words = option_words;
  s.src_ip = 0xC0000201;
  s.dst_ip = 0xEF110001;
  s.src_port = 36001;
  s.dst_port = 36001;
  Bytes b(2 + capture::net::udp_header_bytes(s) + payload.size());
  b[0] = static_cast<std::byte>(split);
  b[1] = static_cast<std::byte>(split >> 8);
  capture::net::write_udp_headers(s, payload.size(), std::span(b).subspan(2));
  std::copy(payload.begin(), payload.end(), b.end() - static_cast<std::ptrdiff_t>(payload.size()));
  return b;
}

Bytes text(std::string_view s) {
  Bytes b(s.size());
  std::transform(s.begin(), s.end(), b.begin(), [](char c) { return static_cast<std::byte>(c); });
  return b;
}

// A VDIF frame of 128 data bytes (legacy: 16-byte header), frame 99 of 25600 per second.
Bytes vdif_payload(bool legacy) {
  capture::vdif::Header h;
  h.legacy = legacy;
  h.seconds = 1000;
  h.frame = 99;
  h.epoch = 50;
  h.nbits = 2;
  h.log2_nchan = 2;
  h.thread_id = 3;
  h.frame_words = static_cast<uint32_t>((h.header_bytes() + 128) / 8);
  Bytes p(static_cast<std::size_t>(h.frame_bytes()));
  std::array<std::byte, capture::vdif::kHeaderBytes> raw{};
  capture::vdif::encode(h, raw);
  std::copy_n(raw.begin(), h.header_bytes(), p.begin());
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus-dir>\n", argv[0]);
    return 2;
  }
  const fs::path root = argv[1];
  for (const char* t : {"parse_udp", "codif", "vdif", "http_head"}) {
    fs::create_directories(root / t / "seeds");
    fs::create_directories(root / t / "work");
  }
  const Bytes v3 = codif_payload(small(capture::codif::Layout::v3, capture::codif::kSyncV3));
  const Bytes v1 = codif_payload(small(capture::codif::Layout::v1, capture::codif::kSyncV1));
  const Bytes beef =
      codif_payload(small(capture::codif::Layout::v3, capture::codif::kSyncAdeadbee));
  const Bytes beef1 =
      codif_payload(small(capture::codif::Layout::v1, capture::codif::kSyncAdeadbee));
  bool ok = write(root / "codif/seeds/v3", v3) && write(root / "codif/seeds/v1", v1) &&
            write(root / "codif/seeds/adeadbee_v3", beef) &&
            write(root / "codif/seeds/adeadbee_v1", beef1) &&
            write(root / "vdif/seeds/frame", vdif_payload(false)) &&
            write(root / "vdif/seeds/legacy", vdif_payload(true));
  ok = ok && write(root / "parse_udp/seeds/plain", udp_frame(0, 0, v3, 0xFFFF)) &&
       write(root / "parse_udp/seeds/split42", udp_frame(0, 0, v3, 42)) &&
       write(root / "parse_udp/seeds/qinq", udp_frame(2, 0, v1, 128)) &&
       write(root / "parse_udp/seeds/vlan_options", udp_frame(1, 3, v3, 64)) &&
       write(root / "parse_udp/seeds/tiny", udp_frame(0, 0, Bytes(4), 0xFFFF));
  ok = ok &&
       write(root / "http_head/seeds/get_metrics",
             text("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")) &&
       write(root / "http_head/seeds/post_trigger",
             text("POST /trigger HTTP/1.1\r\nContent-Length: 2\r\nAuthorization: bearer  t\r\n"
                  "Expect: 100-continue\r\n\r\n{}")) &&
       write(root / "http_head/seeds/bare_lf", text("GET /metrics?x HTTP/1.0\nA: b\n\n")) &&
       write(root / "http_head/seeds/chunked",
             text("POST /trigger HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"));
  if (!ok) {
    std::fprintf(stderr, "fuzz_make_seeds: cannot write under %s\n", root.c_str());
    return 1;
  }
  return 0;
}
