// The memo steps of check_frame (frame_check.cpp), inline, for check_frame itself and for the
// verbs path's fast path (Ingest::on_slot): a frame whose headers match its expected stream's
// UDP memo and whose CODIF header matches the stream's CODIF memo is accepted with what the
// memos hold, without a call into check_frame. Capture thread only.
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

// A frame whose masked header words and wire length equal the memo's parses to the memo's
// UdpFrame and classifies to `stream` (the classifier is fixed at start-up).
inline bool from_udp_memo(const UdpMemo& m, std::span<const std::byte> head, std::size_t wire_bytes,
                          uint32_t stream, Checked& out) noexcept {
  if (!m.valid || wire_bytes != m.wire_bytes || head.size() < UdpMemo::kWords * 8) return false;
  uint64_t diff = 0;
  for (std::size_t k = 0; k < UdpMemo::kWords; ++k)  // a fixed count: unrolled
    diff |= (load_le64(head.data() + 8 * k) ^ m.words[k]) & m.mask[k];
  if (diff != 0) return false;
  out.frame = m.frame;
  out.stream = stream;
  return true;
}

// decode_v3 takes every field but frame and seconds from words 1-7, and validate() depends on
// word 0 only through frame < frames per period: a header whose words 1-7 and payload length
// equal the memo's decodes and validates to the memo's header with word 0's frame and seconds.
inline bool from_codif_memo(const CodifMemo& m, const std::byte* codif, uint32_t payload_bytes,
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

// check_frame's own steps for a CODIF frame on `expected` when both memos hit: true with `out`
// as check_frame fills it (and check_frame would return kCheckOk); false when either memo
// misses, `out` then partly written, and check_frame decides.
inline bool check_codif_memos(std::span<const std::byte> head, std::size_t wire_bytes,
                              const std::vector<StreamPipeline*>& streams, uint32_t expected,
                              Checked& out) noexcept {
  if (expected >= streams.size()) return false;
  StreamPipeline& sp = *streams[expected];
  if (sp.spec().format != StreamFormat::codif) return false;
  if (!from_udp_memo(sp.udp_memo, head, wire_bytes, expected, out)) return false;
  const net::UdpFrame& f = out.frame;
  const std::size_t avail = head.size() > f.payload_offset ? head.size() - f.payload_offset : 0;
  const std::size_t codif_bytes = avail < f.payload_bytes ? avail : f.payload_bytes;
  if (codif_bytes < codif::kHeaderBytes) return false;
  out.codif = true;
  return from_codif_memo(sp.codif_memo, head.data() + f.payload_offset, f.payload_bytes, out);
}

}  // namespace rocecap::capture::memo
