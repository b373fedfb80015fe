// memo::refresh_head_memo: the UDP memo and the CODIF or VDIF memo of a stream joined into one
// masked image of the frame's first bytes (StreamPipeline::head_memo, capture/frame_memo.hpp).
#include <algorithm>

#include "capture/frame_memo.hpp"

namespace rocecap::capture::memo {
namespace {

// The UDP memo's words (little-endian values) as bytes [0, payload_offset) of the image; its
// mask is already clear from the payload on.
void put_udp(HeadMemo& m, const UdpMemo& u) noexcept {
  for (std::size_t at = 0; at < u.frame.payload_offset; ++at) {
    const unsigned shift = 8 * (at % 8);
    m.image[at] = static_cast<std::byte>(u.words[at / 8] >> shift);
    m.mask[at] = static_cast<std::byte>(u.mask[at / 8] >> shift);
  }
}

void put_bytes(HeadMemo& m, std::size_t at, const std::byte* bytes, std::size_t n) noexcept {
  std::copy_n(bytes, n, m.image.data() + at);
  std::fill_n(m.mask.data() + at, n, std::byte{0xFF});
}

// codif_memo_hit's conditions beyond the two compares, fixed once the memos are: the CODIF
// memo validated against this payload length, and the whole 64-byte header in the head.
bool put_codif(HeadMemo& m, const StreamPipeline& sp, std::size_t head) noexcept {
  const net::UdpFrame& f = sp.udp_memo.frame;
  const CodifMemo& c = sp.codif_memo;
  const std::size_t at = f.payload_offset;
  if (c.payload_bytes == 0 || c.payload_bytes != f.payload_bytes) return false;
  if (f.payload_bytes < codif::kHeaderBytes || at + codif::kHeaderBytes > head) return false;
  put_bytes(m, at + 8, c.words.data(), CodifMemo::kWordsBytes);
  m.time_at = static_cast<uint16_t>(at);
  m.kind = HeadMemo::Kind::codif;
  return true;
}

// vdif_memo_hit's: the VDIF memo checked against this payload length, the VTP number (when the
// stream has one) and the 32-byte header in the head; word 0's two flag bits compared.
bool put_vdif(HeadMemo& m, const StreamPipeline& sp, std::size_t head) noexcept {
  const net::UdpFrame& f = sp.udp_memo.frame;
  const VdifMemo& v = sp.vdif_memo;
  const bool vtp = sp.spec().vdif.vtp;
  const std::size_t at = f.payload_offset + (vtp ? vdif::kVtpBytes : 0);
  if (v.payload_bytes == 0 || v.payload_bytes != f.payload_bytes) return false;
  if (at + vdif::kHeaderBytes > head) return false;
  m.image[at + 3] = v.word0_top & std::byte{0xC0};
  m.mask[at + 3] = std::byte{0xC0};
  put_bytes(m, at + VdifMemo::kTailOffset, v.tail.data(), VdifMemo::kTailBytes);
  m.time_at = static_cast<uint16_t>(at);
  m.vtp = vtp;
  m.kind = HeadMemo::Kind::vdif;
  return true;
}

}  // namespace

void refresh_head_memo(StreamPipeline& sp) noexcept {
  HeadMemo& m = sp.head_memo;
  m = HeadMemo{};
  const UdpMemo& u = sp.udp_memo;
  // head_matches reads kBytes of the header slot, whatever the frame's length.
  if (!u.valid || sp.ring().header(0).size() < HeadMemo::kBytes) return;
  // The compared header must end within the frame's head and within the image.
  const std::size_t limit = std::min({u.wire_bytes, std::size_t{sp.split()}, HeadMemo::kBytes});
  put_udp(m, u);
  const StreamFormat format = sp.spec().format;
  const bool ok = (format == StreamFormat::codif && put_codif(m, sp, limit)) ||
                  (format == StreamFormat::vdif && put_vdif(m, sp, limit));
  if (!ok) {
    m = HeadMemo{};
    return;
  }
  m.shape = slot_shape(u.frame, sp.split());
  m.wire_bytes = static_cast<uint32_t>(u.wire_bytes);
}

}  // namespace rocecap::capture::memo
