// The memo steps of check_frame (frame_check.cpp), inline, for check_frame itself and for the
// verbs path's fast path (Ingest::on_slot): a frame whose headers match its expected stream's
// UDP memo and whose CODIF header matches the stream's CODIF memo (or whose VDIF header matches
// its VDIF memo) is accepted with what the memos hold, without a call into check_frame and
// without copying what they hold. Capture thread only.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "capture/frame_check.hpp"
#include "capture/stream_pipeline.hpp"

namespace rocecap::capture::memo {

inline uint64_t load_le64(const std::byte* p) noexcept {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}

// 16 bytes as one vector register (GCC/Clang vector extension: SSE2 on x86-64, its baseline;
// NEON on AArch64). The memo compares below take 16 bytes per instruction where a word loop or
// a memcmp call took 8 (and the call itself): about 20 fewer instructions per packet.
using Bytes16 = uint64_t __attribute__((vector_size(16)));

inline Bytes16 load16(const void* p) noexcept {
  Bytes16 v;
  std::memcpy(&v, p, sizeof v);  // an unaligned load
  return v;
}

// 32 bytes: one AVX2 register where the caller is compiled for it (VerbsSource::poll's AVX2
// clone), two SSE2 registers elsewhere (GCC lowers the wider vector).
using Bytes32 = uint64_t __attribute__((vector_size(32)));

// (Through a reference: a function returning a 32-byte vector has a different ABI with and
// without AVX, which g++ warns about.)
inline void load32(Bytes32& v, const void* p) noexcept {
  std::memcpy(&v, p, sizeof v);
}

// memcmp(a, b, N) == 0 for 16 <= N <= 64, without a branch per piece: the last piece
// overlaps the one before it when N is not a multiple of 16.
template <std::size_t N>
inline bool same_bytes(const std::byte* a, const std::byte* b) noexcept {
  static_assert(N >= 16 && N <= 64);
  Bytes16 diff = load16(a) ^ load16(b);
  for (std::size_t k = 16; k < N; k += 16) {  // a fixed count: unrolled
    const std::size_t at = k + 16 <= N ? k : N - 16;
    diff |= load16(a + at) ^ load16(b + at);
  }
  return (diff[0] | diff[1]) == 0;
}

// A frame whose masked header words and wire length equal the memo's parses to the memo's
// UdpFrame and classifies to the memo's stream (the classifier is fixed at start-up).
inline bool udp_memo_matches(const UdpMemo& m, std::span<const std::byte> head,
                             std::size_t wire_bytes) noexcept {
  if (!m.valid || wire_bytes != m.wire_bytes || head.size() < UdpMemo::kWords * 8) return false;
  if constexpr (std::endian::native == std::endian::big) {  // words and mask are little-endian
    uint64_t diff = 0;
    for (std::size_t k = 0; k < UdpMemo::kWords; ++k)
      diff |= (load_le64(head.data() + 8 * k) ^ m.words[k]) & m.mask[k];
    return diff == 0;
  } else {
    // Written out: g++ -O2 kept a loop here, its control cost as much as the compares.
    static_assert(UdpMemo::kWords == 6);
    const std::byte* h = head.data();
    const Bytes16 diff = ((load16(h) ^ load16(&m.words[0])) & load16(&m.mask[0])) |
                         ((load16(h + 16) ^ load16(&m.words[2])) & load16(&m.mask[2])) |
                         ((load16(h + 32) ^ load16(&m.words[4])) & load16(&m.mask[4]));
    return (diff[0] | diff[1]) == 0;
  }
}

inline bool from_udp_memo(const UdpMemo& m, std::span<const std::byte> head, std::size_t wire_bytes,
                          uint32_t stream, Checked& out) noexcept {
  if (!udp_memo_matches(m, head, wire_bytes)) return false;
  out.frame = m.frame;
  out.stream = stream;
  return true;
}

// Word 0 of a CODIF header: the frame number within the period and the seconds.
struct FrameTime {
  uint32_t frame = 0;
  uint32_t seconds = 0;
};

// decode_v3 takes every field but frame and seconds from words 1-7, and validate() depends on
// word 0 only through frame < frames per period: a header whose words 1-7 and payload length
// equal the memo's decodes and validates to the memo's header with word 0's frame and seconds.
inline bool codif_memo_matches(const CodifMemo& m, const std::byte* codif, uint32_t payload_bytes,
                               FrameTime& out) noexcept {
  if (m.payload_bytes != payload_bytes ||
      !same_bytes<CodifMemo::kWordsBytes>(codif + 8, m.words.data())) {
    return false;
  }
  const uint64_t w0 = load_le64(codif);
  out.frame = static_cast<uint32_t>(w0);
  out.seconds = static_cast<uint32_t>(w0 >> 32);
  return out.frame < m.timing.frames_per_period;  // else the slow path names the reason
}

// The header and timing the memo stands for, with word 0's frame and seconds.
inline void take_codif_memo(const CodifMemo& m, FrameTime ft, Checked& out) noexcept {
  out.header = m.header;
  out.header.frame = ft.frame;
  out.header.seconds = ft.seconds;
  out.timing = m.timing;
}

inline bool from_codif_memo(const CodifMemo& m, const std::byte* codif, uint32_t payload_bytes,
                            Checked& out) noexcept {
  FrameTime ft;
  if (!codif_memo_matches(m, codif, payload_bytes, ft)) return false;
  take_codif_memo(m, ft, out);
  return true;
}

// check_frame's own steps for a CODIF frame on `sp` when both of its memos hit: true, with the
// frame's word 0 in `out`; everything else check_frame would give is in the memos
// (udp_memo.frame, codif_memo.header but for frame and seconds, codif_memo.timing), read there
// in place by Ingest::on_slot instead of copied. False when either memo misses. On the lane
// itself head_codif_hit below gives the same answer in one compare; this is its reference.
inline bool codif_memo_hit(std::span<const std::byte> head, std::size_t wire_bytes,
                           const StreamPipeline& sp, FrameTime& out) noexcept {
  if (sp.spec().format != StreamFormat::codif) return false;
  if (!udp_memo_matches(sp.udp_memo, head, wire_bytes)) return false;
  const net::UdpFrame& f = sp.udp_memo.frame;
  const std::size_t avail = head.size() > f.payload_offset ? head.size() - f.payload_offset : 0;
  const std::size_t codif_bytes = avail < f.payload_bytes ? avail : f.payload_bytes;
  if (codif_bytes < codif::kHeaderBytes) return false;
  return codif_memo_matches(sp.codif_memo, head.data() + f.payload_offset, f.payload_bytes, out);
}

// Word 0 and 1 of a VDIF header as far as they may differ from the memo's, and the frame's VTP
// number when the stream has one.
struct VdifTime {
  uint32_t frame = 0;
  uint32_t seconds = 0;
  uint64_t psn = 0;
};

// vdif::decode takes every field but frame and seconds from the header bytes the memo holds
// (word 1's top byte, words 2-7) and from word 0's two flag bits, and vdif::validate depends on
// the rest only through frame < frames per second; the thread is in word 3, so it maps to the
// memo's stream, whose header form is the memo's. A header whose compared bytes and UDP payload
// length equal the memo's decodes, validates and maps as the memo's with its own frame and
// seconds. The payload length is compared too: the UDP memo may have moved on to another
// length since, and the frame length field must match the payload (size_mismatch).
inline bool vdif_memo_matches(const VdifMemo& m, const std::byte* vdif, uint32_t payload_bytes,
                              VdifTime& out) noexcept {
  if (m.payload_bytes != payload_bytes ||
      ((vdif[3] ^ m.word0_top) & std::byte{0xC0}) != std::byte{0} ||
      !same_bytes<VdifMemo::kTailBytes>(vdif + VdifMemo::kTailOffset, m.tail.data())) {
    return false;
  }
  const uint64_t w01 = load_le64(vdif);
  out.seconds = static_cast<uint32_t>(w01) & 0x3FFFFFFFu;
  out.frame = static_cast<uint32_t>(w01 >> 32) & 0xFFFFFFu;
  return out.frame < m.timing.frames_per_period;  // else the slow path names the reason
}

// check_frame's own steps for a VDIF frame on `sp` (a flow's first stream) when both of its
// memos hit: true, with the frame's time (and VTP number) in `out`; the rest is in the memos,
// read in place by Ingest::on_slot. The VTP number is not noted here: the caller does, once.
inline bool vdif_memo_hit(std::span<const std::byte> head, std::size_t wire_bytes,
                          const StreamPipeline& sp, VdifTime& out) noexcept {
  if (sp.spec().format != StreamFormat::vdif) return false;
  if (!udp_memo_matches(sp.udp_memo, head, wire_bytes)) return false;
  const net::UdpFrame& f = sp.udp_memo.frame;
  const std::size_t skip = sp.spec().vdif.vtp ? vdif::kVtpBytes : 0;
  if (head.size() < f.payload_offset + skip + vdif::kHeaderBytes) return false;
  const std::byte* udp = head.data() + f.payload_offset;
  if (!vdif_memo_matches(sp.vdif_memo, udp + skip, f.payload_bytes, out)) return false;
  if (skip != 0) out.psn = load_le64(udp);
  return true;
}

// Rebuilds sp.head_memo from sp's UDP, CODIF and VDIF memos (capture/head_memo.cpp); called
// wherever check_frame changes one of them. Not on the hot path.
void refresh_head_memo(StreamPipeline& sp) noexcept;

// `frame` (the header slot, at least HeadMemo::kBytes readable) equals the image wherever the
// mask is set. Bytes past the frame's head are read but masked (the memo is built only when
// the compared bytes lie within the head of a frame of wire_bytes).
[[gnu::always_inline]] inline bool head_matches(const HeadMemo& m,
                                                const std::byte* frame) noexcept {
  static_assert(HeadMemo::kBytes == 112);
  Bytes32 d{};
  const auto piece = [&](std::size_t at) {
    Bytes32 f, i, k;
    load32(f, frame + at);
    load32(i, &m.image[at]);
    load32(k, &m.mask[at]);
    d |= (f ^ i) & k;
  };
  // Written out: g++ -O2 kept the loop (20 instructions of control for 36 of compares).
  piece(0);
  piece(32);
  piece(64);
  Bytes16 diff = (load16(frame + 96) ^ load16(&m.image[96])) & load16(&m.mask[96]);
  diff |= Bytes16{d[0], d[1]} | Bytes16{d[2], d[3]};
  return (diff[0] | diff[1]) == 0;
}

// codif_memo_hit through the head memo: the same answer and FrameTime for the same memos
// (tests/unit/head_memo_test.cpp compares them).
[[gnu::always_inline]] inline bool head_codif_hit(const StreamPipeline& sp, const std::byte* frame,
                                                  uint32_t wire_bytes, FrameTime& out) noexcept {
  const HeadMemo& m = sp.head_memo;
  // The kind first: on a VDIF stream this test is made first and fails on one compare.
  if (m.kind != HeadMemo::Kind::codif || wire_bytes != m.wire_bytes || !head_matches(m, frame))
    return false;
  const uint64_t w0 = load_le64(frame + m.time_at);
  out.frame = static_cast<uint32_t>(w0);
  out.seconds = static_cast<uint32_t>(w0 >> 32);
  return out.frame < sp.codif_memo.timing.frames_per_period;
}

// vdif_memo_hit through the head memo, likewise.
[[gnu::always_inline]] inline bool head_vdif_hit(const StreamPipeline& sp, const std::byte* frame,
                                                 uint32_t wire_bytes, VdifTime& out) noexcept {
  const HeadMemo& m = sp.head_memo;
  if (m.kind != HeadMemo::Kind::vdif || wire_bytes != m.wire_bytes || !head_matches(m, frame))
    return false;
  const uint64_t w01 = load_le64(frame + m.time_at);
  out.seconds = static_cast<uint32_t>(w01) & 0x3FFFFFFFu;
  out.frame = static_cast<uint32_t>(w01 >> 32) & 0xFFFFFFu;
  if (m.vtp) out.psn = load_le64(frame + m.time_at - vdif::kVtpBytes);
  return out.frame < sp.vdif_memo.timing.frames_per_period;
}

// codif_memo_hit with what Ingest::on_slot reads from the memos gathered into a Checked, as
// check_frame fills it (and check_frame would return kCheckOk) for a frame on `expected`;
// false when either memo misses (`out` then untouched). The form the equivalence tests
// (tests/unit/frame_memo_test.cpp) compare with check_frame.
inline bool check_codif_memos(std::span<const std::byte> head, std::size_t wire_bytes,
                              const std::vector<StreamPipeline*>& streams, uint32_t expected,
                              Checked& out) noexcept {
  if (expected >= streams.size()) return false;
  const StreamPipeline& sp = *streams[expected];
  FrameTime ft;
  if (!codif_memo_hit(head, wire_bytes, sp, ft)) return false;
  out.stream = expected;
  out.frame = sp.udp_memo.frame;
  out.codif = true;
  take_codif_memo(sp.codif_memo, ft, out);
  return true;
}

}  // namespace rocecap::capture::memo
