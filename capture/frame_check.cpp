#include "capture/frame_check.hpp"

#include "capture/reject_reason.hpp"

namespace rocecap::capture {

std::size_t check_frame(std::span<const std::byte> head, std::size_t wire_bytes,
                        const StreamClassifier& classifier,
                        const std::vector<StreamPipeline*>& streams, Checked& out) noexcept {
  net::UdpFrame& f = out.frame;
  if (const auto e = net::parse_udp(head, wire_bytes, f); e != net::ParseError::ok) {
    return reject_index(e);
  }
  out.stream = classifier.find({f.dst_ip, f.dst_port, f.src_ip});
  if (out.stream == StreamClassifier::kNoStream) return kRejectNoStream;
  const StreamSpec& spec = streams[out.stream]->spec();
  out.codif = spec.format == StreamFormat::codif;
  if (!out.codif) return kCheckOk;
  const std::size_t avail = head.size() > f.payload_offset ? head.size() - f.payload_offset : 0;
  const std::size_t codif_bytes = avail < f.payload_bytes ? avail : f.payload_bytes;
  if (!codif::decode(head.subspan(f.payload_offset, codif_bytes), spec.syncs, out.header)) {
    return reject_index(codif::Invalid::bad_sync);
  }
  if (const auto v = codif::validate(out.header, f.payload_bytes, out.timing);
      v != codif::Invalid::ok) {
    return reject_index(v);
  }
  return kCheckOk;
}

}  // namespace rocecap::capture
