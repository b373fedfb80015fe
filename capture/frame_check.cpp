#include "capture/frame_check.hpp"

#include <bit>
#include <cstring>

#include "capture/frame_memo.hpp"
#include "capture/reject_reason.hpp"

namespace rocecap::capture {
namespace {

using memo::from_codif_memo;
using memo::from_udp_memo;
using memo::load_le64;

void remember(CodifMemo& m, const std::byte* codif, uint32_t payload_bytes,
              const Checked& c) noexcept {
  if (c.header.layout != codif::Layout::v3) return;  // v1 keeps flags in word 0
  std::memcpy(m.words.data(), codif + 8, CodifMemo::kWordsBytes);
  m.payload_bytes = payload_bytes;
  m.header = c.header;
  m.timing = c.timing;
}

// The bytes of an IPv4 header parse_udp does not read: TOS, identification, TTL, checksum.
constexpr std::size_t kIpUnread[] = {1, 4, 5, 8, 10, 11};
constexpr std::size_t kUdpChecksum = 6;

void clear_byte(UdpMemo& m, std::size_t at) noexcept {
  m.mask[at / 8] &= ~(uint64_t{0xFF} << (8 * (at % 8)));
}

// Memoises the accepted headers, when the head holds the whole words that cover them.
void remember_udp(UdpMemo& m, std::span<const std::byte> head, std::size_t wire_bytes,
                  const net::UdpFrame& f) noexcept {
  const std::size_t n = (std::size_t{f.payload_offset} + 7) / 8;
  if (n > UdpMemo::kWords || head.size() < n * 8) return;
  m.words.fill(0);
  m.mask.fill(0);
  for (std::size_t k = 0; k < n; ++k) {
    m.words[k] = load_le64(head.data() + 8 * k);
    m.mask[k] = ~uint64_t{0};
  }
  for (std::size_t at = f.payload_offset; at < n * 8; ++at)
    clear_byte(m, at);  // the UDP payload
  for (std::size_t at : kIpUnread)
    clear_byte(m, f.ip_offset + at);
  for (std::size_t at = f.ip_offset + net::kIpv4MinHeaderBytes; at < f.udp_offset; ++at)
    clear_byte(m, at);  // IPv4 options: not read either
  clear_byte(m, f.udp_offset + kUdpChecksum);
  clear_byte(m, f.udp_offset + kUdpChecksum + 1);
  for (std::size_t k = 0; k < n; ++k)
    m.words[k] &= m.mask[k];
  m.valid = true;
  m.wire_bytes = wire_bytes;
  m.frame = f;
}

// parse_udp and the classifier, or their memoised result for the expected stream.
std::size_t parse_and_find(std::span<const std::byte> head, std::size_t wire_bytes,
                           const StreamClassifier& classifier,
                           const std::vector<StreamPipeline*>& streams, Checked& out,
                           uint32_t expected) noexcept {
  UdpMemo* memo = expected < streams.size() ? &streams[expected]->udp_memo : nullptr;
  if (memo && from_udp_memo(*memo, head, wire_bytes, expected, out)) return kCheckOk;
  net::UdpFrame& f = out.frame;
  if (const auto e = net::parse_udp(head, wire_bytes, f); e != net::ParseError::ok) {
    return reject_index(e);
  }
  out.stream = classifier.find({f.dst_ip, f.dst_port, f.src_ip});
  if (out.stream == StreamClassifier::kNoStream) return kRejectNoStream;
  if (memo && out.stream == expected) {
    remember_udp(*memo, head, wire_bytes, f);
    memo::refresh_head_memo(*streams[expected]);
  }
  return kCheckOk;
}

}  // namespace

std::size_t check_frame(std::span<const std::byte> head, std::size_t wire_bytes,
                        const StreamClassifier& classifier,
                        const std::vector<StreamPipeline*>& streams, Checked& out,
                        uint32_t expected) noexcept {
  if (const auto r = parse_and_find(head, wire_bytes, classifier, streams, out, expected);
      r != kCheckOk) {
    return r;
  }
  const net::UdpFrame& f = out.frame;
  StreamPipeline& sp = *streams[out.stream];
  out.codif = sp.spec().format == StreamFormat::codif;
  if (!out.codif) {
    if (sp.spec().format == StreamFormat::vdif) return check_vdif(head, streams, out);
    return kCheckOk;
  }
  const std::size_t avail = head.size() > f.payload_offset ? head.size() - f.payload_offset : 0;
  const std::size_t codif_bytes = avail < f.payload_bytes ? avail : f.payload_bytes;
  const std::byte* codif = head.data() + f.payload_offset;
  if (codif_bytes >= codif::kHeaderBytes &&
      from_codif_memo(sp.codif_memo, codif, f.payload_bytes, out)) {
    return kCheckOk;
  }
  // Too short to hold a header at all: not a frame with a wrong sync word. (After the memo: a
  // memo hit has the payload length of a frame that passed this.)
  if (f.payload_bytes < codif::kHeaderBytes) return kRejectShortPayload;
  if (!codif::decode(head.subspan(f.payload_offset, codif_bytes), sp.spec().syncs, out.header)) {
    return reject_index(codif::Invalid::bad_sync);
  }
  if (const auto v = codif::validate(out.header, f.payload_bytes, out.timing);
      v != codif::Invalid::ok) {
    return reject_index(v);
  }
  remember(sp.codif_memo, codif, f.payload_bytes, out);
  memo::refresh_head_memo(sp);
  return kCheckOk;
}

}  // namespace rocecap::capture
