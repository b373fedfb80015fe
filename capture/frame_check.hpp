// The per-frame decision shared by every backend: parse the Ethernet/VLAN/IPv4/UDP headers,
// find the stream, and for CODIF streams decode and validate the CODIF header. The copying
// backends (Ingest::on_frame) and the verbs backend (Ingest::on_slot, frames already in a
// slot) both call it, so a frame is accepted or rejected by the same rules whatever the source.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "capture/classifier.hpp"
#include "capture/codif/header.hpp"
#include "capture/net/packet.hpp"
#include "capture/stream_pipeline.hpp"

namespace rocecap::capture {

struct Checked {
  uint32_t stream = 0;  // index into the streams given to check_frame
  net::UdpFrame frame;
  // header/timing are valid and the frame is sequenced: a CODIF stream, or a VDIF stream seen
  // through vdif::sequencer_view (capture/vdif/timeline.hpp); false: a udp-format stream.
  bool codif = false;
  codif::Header header;
  codif::Timing timing;
  // A VDIF frame's VTP number was noted (check_vdif): a second check of the same frame, on its
  // head joined with its payload (Ingest::on_slot), does not note it again. The caller clears
  // it for each new frame.
  bool vtp_noted = false;
};

inline constexpr std::size_t kCheckOk = ~std::size_t{0};

// `head` holds at least the frame's headers and (CODIF) the 64-byte CODIF header, or the
// whole frame when it is shorter; `wire_bytes` is the whole frame's length. Returns kCheckOk
// with `out` filled, or the reject reason (reject_reason.hpp). No allocation, no throw.
// Capture thread: remembers each CODIF stream's last accepted header (StreamPipeline::
// codif_memo), so that the common case, a header that differs only in frame and seconds,
// skips decode and validate with the same result.
// `expected`, when not kNoStream, is the stream the frame most likely belongs to (the verbs
// QP's): its StreamPipeline::udp_memo is tried before parsing, and filled when the frame is
// accepted for it after parsing. The result is the same with or without it.
// Whenever it changes a stream's memos it rebuilds that stream's head memo
// (StreamPipeline::head_memo), the form the verbs fast lane tests them in.
std::size_t check_frame(std::span<const std::byte> head, std::size_t wire_bytes,
                        const StreamClassifier& classifier,
                        const std::vector<StreamPipeline*>& streams, Checked& out,
                        uint32_t expected = StreamClassifier::kNoStream) noexcept;

// VDIF streams (doc/vdif.md), called by check_frame for them: `out.stream` is the flow's first
// stream; routes the frame to the stream of its thread, checks the VTP number and the header,
// and fills out.header/out.timing with the sequencer's view. Same contract as check_frame.
std::size_t check_vdif(std::span<const std::byte> head, const std::vector<StreamPipeline*>& streams,
                       Checked& out) noexcept;

// Start-up: links each VDIF stream to the next stream of the same flow (its other threads),
// through StreamPipeline::next_thread_stream. Streams sharing a flow must be VDIF.
void link_vdif_threads(const std::vector<StreamPipeline*>& streams) noexcept;

}  // namespace rocecap::capture
