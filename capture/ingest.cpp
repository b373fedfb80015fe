#include "capture/ingest.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include "capture/frame_memo.hpp"

namespace rocecap::capture {
namespace {

std::vector<StreamKey> keys_of(const std::vector<StreamPipeline*>& streams) {
  std::vector<StreamKey> keys;
  keys.reserve(streams.size());
  for (const StreamPipeline* s : streams)
    keys.push_back(s->spec().key);
  return keys;
}

// VDIF streams of one flow (one per thread) share a key: the classifier then answers with the
// flow's first stream and check_frame routes by thread.
bool any_vdif(const std::vector<StreamPipeline*>& streams) {
  for (const StreamPipeline* s : streams) {
    if (s->spec().format == StreamFormat::vdif) return true;
  }
  return false;
}

std::size_t total_slots(const std::vector<StreamPipeline*>& streams) {
  std::size_t n = 0;
  for (const StreamPipeline* s : streams)
    n += s->ring().slots();
  return n;
}

}  // namespace

Ingest::Ingest(std::vector<StreamPipeline*> streams, bool record_arrivals)
    : streams_(std::move(streams)), classifier_(keys_of(streams_), any_vdif(streams_)) {
  link_vdif_threads(streams_);  // VDIF thread streams share their flow's key
  // Each slot is queued at most once until the writer releases it, so this never fills.
  if (record_arrivals) arrivals_.emplace(total_slots(streams_));
}

void Ingest::set_start(int64_t unix_ns) noexcept {
  start_ns_ = unix_ns;
  for (StreamPipeline* sp : streams_)
    sp->awaiting_start = true;
}

SlotMeta& Ingest::fill_meta(StreamPipeline& sp, SlotId slot, const net::UdpFrame& f,
                            int64_t timestamp_ns) noexcept {
  SlotMeta& m = sp.ring().meta(slot);
  m = slot_shape(f, sp.split());
  m.timestamp_ns = timestamp_ns;
  return m;
}

bool Ingest::held_before_start(StreamPipeline& sp, SlotId slot, const codif::Header& h,
                               const codif::Timing& t, uint32_t frame, uint32_t seconds) noexcept {
  codif::Header whole = h;
  whole.frame = frame;
  whole.seconds = seconds;
  if (codif::frame_start_unix_ns(whole, t) >= start_ns_) {
    sp.awaiting_start = false;
    return false;
  }
  sp.ring().give_back(slot);
  reject(kRejectBeforeStart);
  return true;
}

void Ingest::settle(uint32_t stream, StreamPipeline& sp, SlotId slot, const Checked& c,
                    int64_t timestamp_ns, uint16_t flags) noexcept {
  SlotMeta& m = fill_meta(sp, slot, c.frame, timestamp_ns);
  if (c.codif) {
    return sequence(stream, sp, slot, m, c.header, c.timing, c.header.frame, c.header.seconds,
                    flags, nullptr);
  }
  m.flags = static_cast<uint16_t>(flags | (sp.next_udp_index == 0 ? kSlotSegmentStart : 0));
  m.frame_index = sp.next_udp_index++;
  record_arrival(stream, slot);
  sp.ring().publish(slot);
}

void Ingest::on_frame(std::span<const std::byte> captured, std::size_t wire_bytes,
                      int64_t timestamp_ns) noexcept {
  seen_.add();
  if (captured.size() < wire_bytes) return reject(kRejectSnapTruncated);
  Checked c;
  if (const auto r = check_frame(captured, wire_bytes, classifier_, streams_, c); r != kCheckOk) {
    return reject(r);
  }
  StreamPipeline& sp = *streams_[c.stream];
  sp.last_arrival_tick = tick_;
  place(c.stream, sp, captured, c, timestamp_ns, nullptr);
}

bool Ingest::on_frame_lent(std::span<const std::byte> captured, std::size_t wire_bytes,
                           int64_t timestamp_ns, BlockLoans& loans) noexcept {
  seen_.add();
  if (captured.size() < wire_bytes) {
    reject(kRejectSnapTruncated);
    return false;
  }
  Checked c;
  if (const auto r = check_frame(captured, wire_bytes, classifier_, streams_, c); r != kCheckOk) {
    reject(r);
    return false;
  }
  StreamPipeline& sp = *streams_[c.stream];
  sp.last_arrival_tick = tick_;
  return place(c.stream, sp, captured, c, timestamp_ns, &loans);
}

// on_slot's general lane: the frame's headers checked in full (check_frame), as on_frame does.
void Ingest::on_slot_checked(uint32_t stream, SlotId slot, uint32_t byte_len, int64_t timestamp_ns,
                             uint16_t flags) noexcept {
  StreamPipeline& sp = *streams_[stream];
  StreamRing& ring = sp.ring();
  const std::byte* slot_head = ring.header(slot).data();
  const std::size_t head = byte_len < sp.split() ? byte_len : sp.split();
  const std::span<const std::byte> h(slot_head, head);
  Checked& c = checked_;
  c.vtp_noted = false;
  std::size_t r = check_frame(h, byte_len, classifier_, streams_, c, stream);
  // The headers and the CODIF header must be contiguous to be parsed. A split smaller than
  // them (allowed for udp streams) leaves part in the payload slot: then both are joined and
  // checked again. A frame accepted on the head alone is accepted identically on the joined
  // bytes, which begin with it, so the copy is made only when the head was not enough.
  // A GPU payload slot is never read by the CPU: then only the header slot is parsed.
  if (r != kCheckOk && head < byte_len && head < kJoinBytes &&
      ring.payload_kind() == memory::MemoryKind::host) {
    r = check_joined(ring, slot, head, byte_len, c);
  }
  // The flow rule of the stream's QP matched the frame; any other answer means a rule or
  // classifier disagreement: counted, never placed in the wrong stream.
  if (r == kCheckOk && c.stream != stream) r = kRejectNoStream;
  if (r != kCheckOk) {
    ring.give_back(slot);
    return reject(r);
  }
  sp.last_arrival_tick = tick_;
  settle(stream, sp, slot, c, timestamp_ns, flags);
}

std::size_t Ingest::check_joined(const StreamRing& ring, SlotId slot, std::size_t head,
                                 uint32_t byte_len, Checked& c) const noexcept {
  std::array<std::byte, kJoinBytes> joined;
  const std::size_t more = std::min<std::size_t>(byte_len, kJoinBytes) - head;
  std::memcpy(joined.data(), ring.header(slot).data(), head);
  std::memcpy(joined.data() + head, ring.payload(slot).data(), more);
  return check_frame(std::span<const std::byte>(joined.data(), head + more), byte_len, classifier_,
                     streams_, c);
}

bool Ingest::place(uint32_t stream, StreamPipeline& sp, std::span<const std::byte> frame,
                   const Checked& c, int64_t timestamp_ns, BlockLoans* loans) noexcept {
  StreamRing& ring = sp.ring();
  const SlotMeta shape = slot_shape(c.frame, sp.split());
  const std::size_t head = shape.header_bytes;
  if (shape.payload_bytes > ring.payload_stride()) {
    reject(kRejectOversize);
    return false;
  }
  const auto slot = ring.acquire();
  if (!slot) return false;  // the ring counted a ring-full drop
  // Scatter as the NIC does: the first `split` bytes to the header slot, the rest after.
  std::memcpy(ring.header(*slot).data(), frame.data(), head);
  const bool lend = loans != nullptr && ring.loans_enabled();
  if (lend) {
    // The lender's memory is writable (a shared ring mapping); the writers only read it.
    ring.lend(*slot, const_cast<std::byte*>(frame.data()) + head, *loans);
  } else {
    std::memcpy(ring.payload(*slot).data(), frame.data() + head, shape.payload_bytes);
  }
  settle(stream, sp, *slot, c, timestamp_ns, 0);
  return lend;
}

// A VDIF flow is quiet when none of its thread streams placed a frame since `idle_since`.
bool Ingest::flow_quiet(const StreamPipeline& first, int64_t idle_since) const noexcept {
  for (const StreamPipeline* sp = &first;; sp = streams_[sp->next_thread_stream]) {
    if (sp->last_arrival_tick > idle_since) return false;
    if (sp->next_thread_stream == StreamClassifier::kNoStream) return true;
  }
}

void Ingest::flush_idle(int64_t idle_since) noexcept {
  for (StreamPipeline* sp : streams_) {
    if (sp->last_arrival_tick <= idle_since && sp->sequencer().pending() != 0) {
      sp->sequencer().flush();
    }
    // A quiet flow's late packets are not coming: its pending VTP numbers are lost.
    if (sp->vtp.pending() != 0 && flow_quiet(*sp, idle_since)) sp->vtp.settle();
  }
}

void Ingest::flush_all() noexcept {
  for (StreamPipeline* sp : streams_) {
    sp->sequencer().flush();
    sp->vtp.settle();
  }
}

}  // namespace rocecap::capture
