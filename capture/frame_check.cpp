#include "capture/frame_check.hpp"

#include <bit>
#include <cstring>

#include "capture/reject_reason.hpp"

namespace rocecap::capture {
namespace {

uint64_t load_le64(const std::byte* p) noexcept {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}

// decode_v3 takes every field but frame and seconds from words 1-7, and validate() depends on
// word 0 only through frame < frames per period: a header whose words 1-7 and payload length
// equal the memo's decodes and validates to the memo's header with word 0's frame and seconds.
bool from_memo(const CodifMemo& m, const std::byte* codif, uint32_t payload_bytes,
               Checked& out) noexcept {
  if (m.payload_bytes != payload_bytes ||
      std::memcmp(codif + 8, m.words.data(), CodifMemo::kWordsBytes) != 0) {
    return false;
  }
  const uint64_t w0 = load_le64(codif);
  const auto frame = static_cast<uint32_t>(w0);
  if (frame >= m.timing.frames_per_period) return false;  // the slow path names the reason
  out.header = m.header;
  out.header.frame = frame;
  out.header.seconds = static_cast<uint32_t>(w0 >> 32);
  out.timing = m.timing;
  return true;
}

void remember(CodifMemo& m, const std::byte* codif, uint32_t payload_bytes,
              const Checked& c) noexcept {
  if (c.header.layout != codif::Layout::v3) return;  // v1 keeps flags in word 0
  std::memcpy(m.words.data(), codif + 8, CodifMemo::kWordsBytes);
  m.payload_bytes = payload_bytes;
  m.header = c.header;
  m.timing = c.timing;
}

}  // namespace

std::size_t check_frame(std::span<const std::byte> head, std::size_t wire_bytes,
                        const StreamClassifier& classifier,
                        const std::vector<StreamPipeline*>& streams, Checked& out) noexcept {
  net::UdpFrame& f = out.frame;
  if (const auto e = net::parse_udp(head, wire_bytes, f); e != net::ParseError::ok) {
    return reject_index(e);
  }
  out.stream = classifier.find({f.dst_ip, f.dst_port, f.src_ip});
  if (out.stream == StreamClassifier::kNoStream) return kRejectNoStream;
  StreamPipeline& sp = *streams[out.stream];
  out.codif = sp.spec().format == StreamFormat::codif;
  if (!out.codif) return kCheckOk;
  const std::size_t avail = head.size() > f.payload_offset ? head.size() - f.payload_offset : 0;
  const std::size_t codif_bytes = avail < f.payload_bytes ? avail : f.payload_bytes;
  const std::byte* codif = head.data() + f.payload_offset;
  if (codif_bytes >= codif::kHeaderBytes && from_memo(sp.codif_memo, codif, f.payload_bytes, out)) {
    return kCheckOk;
  }
  if (!codif::decode(head.subspan(f.payload_offset, codif_bytes), sp.spec().syncs, out.header)) {
    return reject_index(codif::Invalid::bad_sync);
  }
  if (const auto v = codif::validate(out.header, f.payload_bytes, out.timing);
      v != codif::Invalid::ok) {
    return reject_index(v);
  }
  remember(sp.codif_memo, codif, f.payload_bytes, out);
  return kCheckOk;
}

}  // namespace rocecap::capture
