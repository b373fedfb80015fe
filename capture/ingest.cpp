#include "capture/ingest.hpp"

#include <cstring>

namespace rocecap::capture {
namespace {

std::vector<StreamKey> keys_of(const std::vector<StreamPipeline*>& streams) {
  std::vector<StreamKey> keys;
  keys.reserve(streams.size());
  for (const StreamPipeline* s : streams)
    keys.push_back(s->spec().key);
  return keys;
}

std::size_t total_slots(const std::vector<StreamPipeline*>& streams) {
  std::size_t n = 0;
  for (const StreamPipeline* s : streams)
    n += s->ring().slots();
  return n;
}

}  // namespace

Ingest::Ingest(std::vector<StreamPipeline*> streams, bool record_arrivals)
    : streams_(std::move(streams)), classifier_(keys_of(streams_)) {
  // Each slot is queued at most once until the writer releases it, so this never fills.
  if (record_arrivals) arrivals_.emplace(total_slots(streams_));
}

void Ingest::on_frame(std::span<const std::byte> captured, std::size_t wire_bytes,
                      int64_t timestamp_ns) noexcept {
  seen_.add();
  if (captured.size() < wire_bytes) return reject(kRejectSnapTruncated);
  net::UdpFrame f;
  if (const auto e = net::parse_udp(captured, wire_bytes, f); e != net::ParseError::ok) {
    return reject(reject_index(e));
  }
  const uint32_t s = classifier_.find({f.dst_ip, f.dst_port, f.src_ip});
  if (s == StreamClassifier::kNoStream) return reject(kRejectNoStream);
  StreamPipeline& sp = *streams_[s];
  sp.last_arrival_tick = tick_;
  if (sp.spec().format == StreamFormat::udp) {
    return place(s, sp, captured, f, timestamp_ns, nullptr, nullptr);
  }
  codif::Header h;
  if (!codif::decode(captured.subspan(f.payload_offset, f.payload_bytes), sp.spec().syncs, h)) {
    return reject(reject_index(codif::Invalid::bad_sync));
  }
  codif::Timing t;
  if (const auto v = codif::validate(h, f.payload_bytes, t); v != codif::Invalid::ok) {
    return reject(reject_index(v));
  }
  place(s, sp, captured, f, timestamp_ns, &h, &t);
}

void Ingest::place(uint32_t stream, StreamPipeline& sp, std::span<const std::byte> frame,
                   const net::UdpFrame& f, int64_t timestamp_ns, const codif::Header* h,
                   const codif::Timing* t) noexcept {
  StreamRing& ring = sp.ring();
  const std::size_t head = f.frame_bytes < sp.split() ? f.frame_bytes : sp.split();
  if (f.frame_bytes - head > ring.payload_stride()) return reject(kRejectOversize);
  const auto slot = ring.acquire();
  if (!slot) return;  // the ring counted a ring-full drop
  // Scatter as the NIC does: the first `split` bytes to the header slot, the rest after.
  std::memcpy(ring.header(*slot).data(), frame.data(), head);
  std::memcpy(ring.payload(*slot).data(), frame.data() + head, f.frame_bytes - head);
  SlotMeta& m = ring.meta(*slot);
  m.timestamp_ns = timestamp_ns;
  m.wire_bytes = f.frame_bytes;
  m.header_bytes = static_cast<uint32_t>(head);
  m.payload_bytes = static_cast<uint32_t>(f.frame_bytes - head);
  m.udp_payload_offset = f.payload_offset;
  if (h == nullptr) {
    m.flags = sp.next_udp_index == 0 ? kSlotSegmentStart : 0;
    m.frame_index = sp.next_udp_index++;
    record_arrival(stream, *slot);
    ring.publish(*slot);
    return;
  }
  m.flags = h->invalid ? kSlotInvalidBit : 0;
  m.frame_index = codif::absolute_index(*h, *t);
  // The sequencer holds a new frame in its reorder window (it is never delivered within this
  // call), so its flag and its arrival record both precede its publication.
  const Verdict v = sp.sequencer().on_frame(*h, *t, *slot);
  if (!placed(v.decision)) return ring.give_back(*slot);
  if (v.decision == Decision::late_placed) m.flags |= kSlotLate;
  record_arrival(stream, *slot);
}

void Ingest::record_arrival(uint32_t stream, SlotId slot) noexcept {
  // A writer pops a slot's publication before it drains arrivals, so the arrival must be
  // queued no later than the publication.
  if (arrivals_ && !arrivals_->push(ArrivalRef{stream, slot})) arrival_overflows_.add();
}

void Ingest::flush_idle(int64_t idle_since) noexcept {
  for (StreamPipeline* sp : streams_) {
    if (sp->last_arrival_tick <= idle_since && sp->sequencer().pending() != 0) {
      sp->sequencer().flush();
    }
  }
}

void Ingest::flush_all() noexcept {
  for (StreamPipeline* sp : streams_)
    sp->sequencer().flush();
}

}  // namespace rocecap::capture
