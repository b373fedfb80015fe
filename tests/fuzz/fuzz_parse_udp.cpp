// parse_udp on arbitrary frames and header/payload splits.
// Input: 2 bytes (split length, little-endian) + the Ethernet frame.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "capture/net/packet.hpp"
#include "fuzz_check.hpp"

using rocecap::capture::net::ParseError;
using rocecap::capture::net::UdpFrame;

namespace {

bool same(const UdpFrame& a, const UdpFrame& b) {
  return a.dst_mac == b.dst_mac && a.src_mac == b.src_mac && a.vlan_count == b.vlan_count &&
         a.vlan_id == b.vlan_id && a.src_ip == b.src_ip && a.dst_ip == b.dst_ip &&
         a.src_port == b.src_port && a.dst_port == b.dst_port && a.ip_offset == b.ip_offset &&
         a.udp_offset == b.udp_offset && a.payload_offset == b.payload_offset &&
         a.payload_bytes == b.payload_bytes && a.frame_bytes == b.frame_bytes;
}

void check_ok(const UdpFrame& f, std::size_t head, std::size_t wire) {
  FUZZ_CHECK(f.vlan_count <= rocecap::capture::net::kMaxVlanTags);
  FUZZ_CHECK(f.ip_offset == 14 + 4 * f.vlan_count);
  FUZZ_CHECK(f.udp_offset >= f.ip_offset + 20 && f.udp_offset <= f.ip_offset + 60);
  FUZZ_CHECK(f.payload_offset == f.udp_offset + 8);
  FUZZ_CHECK(f.payload_offset <= head);  // every header byte was readable
  FUZZ_CHECK(std::size_t{f.payload_offset} + f.payload_bytes == f.frame_bytes);
  FUZZ_CHECK(f.frame_bytes <= wire);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::size_t wire = size - 2;
  const std::size_t split = (std::size_t{data[0]} | std::size_t{data[1]} << 8) % (wire + 1);
  // Exactly-sized copies, so that AddressSanitizer sees any read past the readable head.
  auto frame = std::make_unique<std::byte[]>(wire);
  std::memcpy(frame.get(), data + 2, wire);
  auto head = std::make_unique<std::byte[]>(split);
  std::memcpy(head.get(), data + 2, split);

  UdpFrame whole;
  const ParseError rw = rocecap::capture::net::parse_udp({frame.get(), wire}, whole);
  FUZZ_CHECK(rw != ParseError::headers_beyond_split);  // nothing split: cannot happen
  if (rw == ParseError::ok) check_ok(whole, wire, wire);

  UdpFrame part;
  const ParseError rp = rocecap::capture::net::parse_udp({head.get(), split}, wire, part);
  // Same checks in the same order on the same bytes: the split only adds headers_beyond_split.
  FUZZ_CHECK(rp == rw || rp == ParseError::headers_beyond_split);
  if (rp == ParseError::ok) {
    check_ok(part, split, wire);
    FUZZ_CHECK(same(part, whole));
  }
  if (rw == ParseError::ok && split >= whole.payload_offset) FUZZ_CHECK(rp == ParseError::ok);
  FUZZ_CHECK(rocecap::capture::net::to_string(rp) != "unknown");
  return 0;
}
