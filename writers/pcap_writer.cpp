#include "writers/pcap_writer.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

namespace rocecap::writers {
namespace {

template <std::size_t N>
std::array<std::byte, N> pack(std::initializer_list<uint32_t> words) {
  std::array<std::byte, N> out{};
  std::size_t at = 0;
  for (uint32_t w : words) {
    std::memcpy(out.data() + at, &w, sizeof w);
    at += sizeof w;
  }
  return out;
}

std::array<std::byte, kPcapFileHeaderBytes> file_header(uint32_t snaplen) {
  // version 2.4 is two 16-bit fields: pack them as one host-order word would mis-order them.
  std::array<std::byte, kPcapFileHeaderBytes> h{};
  const uint32_t magic = kPcapMagicNs;
  const uint16_t major = 2, minor = 4;
  const uint32_t zone = 0, sigfigs = 0, link = kLinktypeEthernet;
  std::memcpy(h.data() + 0, &magic, 4);
  std::memcpy(h.data() + 4, &major, 2);
  std::memcpy(h.data() + 6, &minor, 2);
  std::memcpy(h.data() + 8, &zone, 4);
  std::memcpy(h.data() + 12, &sigfigs, 4);
  std::memcpy(h.data() + 16, &snaplen, 4);
  std::memcpy(h.data() + 20, &link, 4);
  return h;
}

}  // namespace

PcapWriter::PcapWriter(PathMaker path_maker, const RotationOptions& rotation, PcapOptions options)
    : out_(std::move(path_maker), rotation, file_header(options.snaplen)), options_(options) {}

Status PcapWriter::write_packet(int64_t unix_ns, std::span<const std::byte> head,
                                std::span<const std::byte> tail, uint32_t wire_len) {
  const uint64_t ns = unix_ns < 0 ? 0 : static_cast<uint64_t>(unix_ns);
  const std::size_t total = head.size() + tail.size();
  const std::size_t caplen = std::min<std::size_t>(total, options_.snaplen);
  head = head.first(std::min(head.size(), caplen));
  tail = tail.first(caplen - head.size());
  const auto record = pack<kPcapRecordHeaderBytes>(
      {static_cast<uint32_t>(ns / 1'000'000'000), static_cast<uint32_t>(ns % 1'000'000'000),
       static_cast<uint32_t>(caplen), wire_len != 0 ? wire_len : static_cast<uint32_t>(total)});
  const std::array<Piece, 3> pieces{bytes_piece(record), borrowed_piece(head, borrow_),
                                    borrowed_piece(tail, borrow_)};
  return out_.write(pieces);
}

}  // namespace rocecap::writers
