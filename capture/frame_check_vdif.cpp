// check_frame for VDIF streams (doc/vdif.md). It always decodes and validates; what it accepted
// for a flow's own stream it remembers (StreamPipeline::vdif_memo) for the verbs path's fast
// lane (Ingest::on_slot, capture/frame_memo.hpp), which skips this function when both memos hit.
#include <algorithm>
#include <cstring>

#include "capture/frame_check.hpp"
#include "capture/frame_memo.hpp"
#include "capture/reject_reason.hpp"
#include "capture/vdif/timeline.hpp"

namespace rocecap::capture {
namespace {

// The stream of the flow (starting at `first`) that records `thread`, or kNoStream.
uint32_t thread_stream(const std::vector<StreamPipeline*>& streams, uint32_t first,
                       uint16_t thread) noexcept {
  for (uint32_t s = first; s != StreamClassifier::kNoStream; s = streams[s]->next_thread_stream) {
    const uint32_t wanted = streams[s]->spec().vdif.thread;
    if (wanted == VdifSpec::kAnyThread || wanted == thread) return s;
  }
  return StreamClassifier::kNoStream;
}

// A 32-byte header accepted for the flow's own stream (the stream the classifier found records
// the frame's thread), with the UDP payload length it was checked against.
void remember_vdif(VdifMemo& m, const std::byte* vdif, uint32_t payload_bytes,
                   const Checked& c) noexcept {
  std::copy_n(vdif + VdifMemo::kTailOffset, VdifMemo::kTailBytes, m.tail.data());
  m.word0_top = vdif[3];
  m.payload_bytes = payload_bytes;
  m.header = c.header;
  m.timing = c.timing;
}

}  // namespace

std::size_t check_vdif(std::span<const std::byte> head, const std::vector<StreamPipeline*>& streams,
                       Checked& out) noexcept {
  const net::UdpFrame& f = out.frame;
  StreamPipeline& flow = *streams[out.stream];
  const VdifSpec& spec = flow.spec().vdif;
  const std::size_t avail = head.size() > f.payload_offset ? head.size() - f.payload_offset : 0;
  const std::span<const std::byte> udp =
      head.subspan(f.payload_offset, avail < f.payload_bytes ? avail : f.payload_bytes);
  std::size_t skip = 0;
  if (spec.vtp) {
    if (udp.size() < vdif::kVtpBytes) return reject_index(vdif::Invalid::vtp_missing);
    if (!out.vtp_noted) flow.vtp.note(vdif::vtp_sequence(udp.first<vdif::kVtpBytes>()));
    out.vtp_noted = true;
    skip = vdif::kVtpBytes;
  }
  vdif::Header h;
  if (!vdif::decode(udp.subspan(skip), h)) return reject_index(vdif::Invalid::short_header);
  const uint32_t s = thread_stream(streams, out.stream, h.thread_id);
  if (s == StreamClassifier::kNoStream) return reject_index(vdif::Invalid::unlisted_thread);
  StreamPipeline& sp = *streams[s];
  // One header form per stream: a 16-byte frame among 32-byte ones would shift every field the
  // readers expect at a fixed stride.
  if (sp.vdif_header_bytes != 0 && sp.vdif_header_bytes != h.header_bytes())
    return reject_index(vdif::Invalid::header_form);
  vdif::Timing t;
  if (const auto v = vdif::validate(h, f.payload_bytes - skip, spec.rate, t);
      v != vdif::Invalid::ok) {
    return reject_index(v);
  }
  sp.vdif_header_bytes = static_cast<uint8_t>(h.header_bytes());
  const bool own = s == out.stream;
  out.stream = s;
  out.codif = true;
  out.header = codif::Header{};
  vdif::sequencer_view(h, t, out.header, out.timing);
  if (own && !h.legacy && udp.size() >= skip + vdif::kHeaderBytes) {
    remember_vdif(sp.vdif_memo, udp.data() + skip, f.payload_bytes, out);
    memo::refresh_head_memo(sp);
  }
  return kCheckOk;
}

void link_vdif_threads(const std::vector<StreamPipeline*>& streams) noexcept {
  for (std::size_t i = 0; i < streams.size(); ++i) {
    if (streams[i]->spec().format != StreamFormat::vdif) continue;
    for (std::size_t k = i + 1; k < streams.size(); ++k) {
      if (streams[k]->spec().key == streams[i]->spec().key) {
        streams[i]->next_thread_stream = static_cast<uint32_t>(k);
        break;
      }
    }
  }
}

}  // namespace rocecap::capture
