#include "writers/capture_writer.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "writers/staging/engine_factory.hpp"
#include "writers/uring_queue.hpp"

namespace rocecap::writers {
namespace {

using capture::SlotId;
using capture::SlotMeta;
using capture::StreamRing;

// The UDP payload of a slot, which the split may have cut in two: the end of the header slot
// and the start of the payload slot.
struct UdpPayload {
  std::span<const std::byte> head, tail;
  std::size_t size() const noexcept { return head.size() + tail.size(); }
  // Bytes [from, size()) as two spans.
  std::pair<std::span<const std::byte>, std::span<const std::byte>> from(std::size_t at) const {
    if (at >= head.size()) return {tail.subspan(std::min(at - head.size(), tail.size())), {}};
    return {head.subspan(at), tail};
  }
};

// `payload`: the slot's payload bytes, from the ring or staged.
UdpPayload udp_payload(const StreamRing& ring, SlotId id, std::span<const std::byte> payload) {
  const SlotMeta& m = ring.meta(id);
  const auto header = std::span<const std::byte>(ring.header(id)).first(m.header_bytes);
  if (m.udp_payload_offset >= header.size()) {
    return {payload.subspan(m.udp_payload_offset - header.size()), {}};
  }
  return {header.subspan(m.udp_payload_offset), payload};
}

std::span<const std::byte> ring_payload(const StreamRing& ring, SlotId id) {
  return std::span<const std::byte>(ring.payload(id)).first(ring.meta(id).payload_bytes);
}

// Tag of a staged pcap record; stream frames are tagged with their stream index.
constexpr uint32_t kPcapTag = UINT32_MAX;

bool any_gpu_ring(const std::vector<capture::StreamPipeline*>& streams) {
  return std::any_of(streams.begin(), streams.end(), [](const auto* sp) {
    return sp->ring().payload_kind() == capture::memory::MemoryKind::gpu;
  });
}

std::size_t largest_payload_stride(const std::vector<capture::StreamPipeline*>& streams) {
  std::size_t n = 0;
  for (const auto* sp : streams)
    n = std::max(n, sp->ring().payload_stride());
  return n;
}

}  // namespace

CaptureWriter::CaptureWriter(std::vector<capture::StreamPipeline*> streams,
                             capture::ArrivalQueue* arrivals, std::vector<StreamWriters> per_stream,
                             std::optional<PcapWriter> pcap, const CaptureWriterOptions& options,
                             WriteErrorReporter on_error)
    : streams_(std::move(streams)),
      arrivals_queue_(arrivals),
      per_stream_(std::move(per_stream)),
      pcap_(std::move(pcap)),
      options_(options),
      on_error_(std::move(on_error)),
      state_(per_stream_.size()),
      consumer_logs_(per_stream_.size(), nullptr),
      batches_(per_stream_.size(), std::vector<SlotId>(options.batch)),
      popped_(per_stream_.size()) {
  if (per_stream_.size() != streams_.size()) {
    throw std::invalid_argument("capture writer: one StreamWriters per stream needed");
  }
  if (pcap_ && arrivals_queue_ == nullptr) {
    throw std::invalid_argument("capture writer: pcap output needs the arrival queue");
  }
  if (pcap_) arrivals_.resize(arrivals_queue_->capacity());
  const bool gpu = any_gpu_ring(streams_);
  if (gpu || options_.force_staging) {
    const capture::memory::MemoryKind kind =
        gpu ? capture::memory::MemoryKind::gpu : capture::memory::MemoryKind::host;
    auto engine = options_.copy_engine
                      ? options_.copy_engine()
                      : staging::make_copy_engine(kind, options_.staging.cuda_device);
    stager_ = std::make_unique<staging::PayloadStager>(
        std::move(engine), largest_payload_stride(streams_), options_.staging);
    stage_items_.reserve(arrivals_.size() + per_stream_.size() * options_.batch);
  }
  if (pcap_ && !stager_) {
    held_n_.assign(streams_.size(), 0);
    sure_.assign(streams_.size(), 0);
    for (const capture::StreamPipeline* sp : streams_) {
      recorded_.emplace_back(sp->ring().slots(), uint8_t{0});
      held_.emplace_back(sp->ring().slots());
    }
  }
  for (std::size_t s = 0; s < per_stream_.size(); ++s)
    whole_.streams.push_back(s);
  whole_.pcap = pcap_.has_value();
  // Staged payloads live only for the stager's callback: those are always copied.
  if (!stager_ && options_.borrow_payloads && !writev_forced_off()) {
    for (StreamWriters& w : per_stream_) {
      if (w.raw) w.raw->borrow_payloads();
    }
    if (pcap_) pcap_->borrow_payloads();
  }
}

// Written slots go back to the ring, or into the stream's retention (capture/retention.hpp),
// which keeps the newest and releases the older ones.
void CaptureWriter::release(std::size_t s, std::span<const SlotId> ids) {
  capture::StreamPipeline& sp = *streams_[s];
  if (consumer_logs_[s] != nullptr && !ids.empty()) {
    consumer_logs_[s]->publish(ids, sp.retention ? sp.retention->range().tail : 0);
  }
  if (sp.retention) return sp.retention->retain(ids);
  sp.ring().release(ids);
}

void CaptureWriter::check(Status s) {
  if (!s.ok() && on_error_) on_error_(s);
}

std::size_t CaptureWriter::poll() {
  return poll(whole_);
}

std::size_t CaptureWriter::poll(const WriterShard& shard) {
  if (stager_) return poll_staged();
  if (pcap_ && shard.pcap) return poll_pcap();  // a writer with pcap is never split
  for (std::size_t s : shard.streams) {
    popped_[s] = streams_[s]->ring().pop(batches_[s]);
  }
  std::size_t total = 0;
  for (std::size_t s : shard.streams) {
    StreamRing& ring = streams_[s]->ring();
    const std::span<const SlotId> ids(batches_[s].data(), popped_[s]);
    for (SlotId id : ids)
      write_frame(s, id, ring_payload(ring, id));
    if (per_stream_[s].raw) check(per_stream_[s].raw->flush_borrowed());
    release(s, ids);
    total += ids.size();
    take_gap_events(s);
  }
  return total;
}

// The pass with pcap (header comment: the drain in steps, each followed by the releases it
// allows). Slots popped before the drain are certainly recorded by its end.
std::size_t CaptureWriter::poll_pcap() {
  for (std::size_t s = 0; s < streams_.size(); ++s) {
    hold_published(s, options_.batch);
    sure_[s] = held_n_[s];
  }
  const std::size_t n = arrivals_queue_->pop(arrivals_);
  const std::size_t step = options_.batch * streams_.size();
  std::size_t total = 0;
  std::size_t i = 0;
  while (true) {
    for (const std::size_t end = std::min(n, i + step); i < end; ++i) {
      const capture::ArrivalRef a = arrivals_[i];
      const StreamRing& ring = streams_[a.stream]->ring();
      write_packet(ring, a.slot, ring_payload(ring, a.slot));
      recorded_[a.stream][a.slot] = 1;
    }
    // Borrowed slot bytes are written before any slot is released below.
    check(pcap_->flush_borrowed());
    if (i >= n) break;
    // Every published slot: the step may have recorded more of one stream than a batch.
    for (std::size_t s = 0; s < streams_.size(); ++s) {
      hold_published(s, held_[s].size());
      total += release_recorded(s, 0);
    }
  }
  for (std::size_t s = 0; s < streams_.size(); ++s)
    total += release_recorded(s, sure_[s]);
  return total;
}

// Pops up to `most` of the stream's published slots behind those it already holds.
void CaptureWriter::hold_published(std::size_t s, std::size_t most) {
  std::vector<SlotId>& held = held_[s];
  const std::size_t room = std::min(most, held.size() - held_n_[s]);
  held_n_[s] += streams_[s]->ring().pop(std::span<SlotId>(held.data() + held_n_[s], room));
}

// Writes the stream's files for, and releases, its oldest held slots: at least `at_least`, and
// beyond them every one whose pcap record is written, up to the first that is not.
std::size_t CaptureWriter::release_recorded(std::size_t s, std::size_t at_least) {
  std::vector<SlotId>& held = held_[s];
  std::vector<uint8_t>& recorded = recorded_[s];
  std::size_t k = 0;
  while (k < held_n_[s] && (k < at_least || recorded[held[k]] != 0))
    recorded[held[k++]] = 0;
  if (k > 0) {
    const StreamRing& ring = streams_[s]->ring();
    const std::span<const SlotId> ids(held.data(), k);
    for (SlotId id : ids)
      write_frame(s, id, ring_payload(ring, id));
    if (per_stream_[s].raw) check(per_stream_[s].raw->flush_borrowed());
    release(s, ids);
    std::copy(held.begin() + static_cast<std::ptrdiff_t>(k),
              held.begin() + static_cast<std::ptrdiff_t>(held_n_[s]), held.begin());
    held_n_[s] -= k;
    sure_[s] -= std::min(sure_[s], k);
  }
  take_gap_events(s);
  return k;
}

void CaptureWriter::write_packet(const StreamRing& ring, SlotId id,
                                 std::span<const std::byte> payload) {
  const SlotMeta& m = ring.meta(id);
  check(pcap_->write_packet(m.timestamp_ns,
                            std::span<const std::byte>(ring.header(id)).first(m.header_bytes),
                            payload, m.wire_bytes));
}

// The same pass as poll(), with every payload read through the stager: arrivals and frames
// are staged in the order they are written, and released after stage() returned.
std::size_t CaptureWriter::poll_staged() {
  for (std::size_t s = 0; s < per_stream_.size(); ++s) {
    popped_[s] = streams_[s]->ring().pop(batches_[s]);
  }
  stage_items_.clear();
  capture::ArrivalQueue* queue = arrivals_queue_;
  if (pcap_ && queue != nullptr) {  // drained after the pops, as in poll()
    const std::size_t n = queue->pop(arrivals_);
    for (std::size_t i = 0; i < n; ++i) {
      const StreamRing& ring = streams_[arrivals_[i].stream]->ring();
      stage_items_.push_back({&ring, arrivals_[i].slot, kPcapTag});
    }
  }
  for (std::size_t s = 0; s < per_stream_.size(); ++s) {
    const StreamRing& ring = streams_[s]->ring();
    const bool files = per_stream_[s].raw || per_stream_[s].codifhdr || per_stream_[s].vdifhdr;
    for (std::size_t k = 0; k < popped_[s]; ++k) {
      if (files) {
        stage_items_.push_back({&ring, batches_[s][k], static_cast<uint32_t>(s)});
      } else {
        count_frame(s, ring.meta(batches_[s][k]));  // pcap only: nothing to copy twice
      }
    }
  }
  stager_->stage(stage_items_,
                 [this](const staging::StageItem& it, std::span<const std::byte> payload, bool ok) {
                   on_staged(it, payload, ok);
                 });
  report_staging_errors();
  std::size_t total = 0;
  for (std::size_t s = 0; s < per_stream_.size(); ++s) {
    release(s, std::span<const SlotId>(batches_[s].data(), popped_[s]));
    total += popped_[s];
    take_gap_events(s);
  }
  return total;
}

void CaptureWriter::on_staged(const staging::StageItem& it, std::span<const std::byte> payload,
                              bool ok) {
  if (!ok) return;  // counted by the stager; a raw gap is filled by the next frame
  if (it.tag == kPcapTag) return write_packet(*it.ring, it.slot, payload);
  write_frame(it.tag, it.slot, payload);
}

// Once per run of failing passes: a lost GPU would otherwise log every pass.
void CaptureWriter::report_staging_errors() {
  const uint64_t errors = stager_->stats().copy_errors;
  const bool failed = errors != staging_errors_seen_;
  if (failed && !staging_failing_) {
    check(Status::error(EIO, "payload staging (" + stager_->engine().describe() +
                                 "): " + stager_->engine().last_error()));
  }
  staging_failing_ = failed;
  staging_errors_seen_ = errors;
}

void CaptureWriter::write_frame(std::size_t s, SlotId id, std::span<const std::byte> payload) {
  StreamWriters& w = per_stream_[s];
  StreamWriteState& st = state_[s];
  if (streams_[s]->spec().format == capture::StreamFormat::vdif)
    return write_vdif_frame(s, id, payload);
  const StreamRing& ring = streams_[s]->ring();
  const SlotMeta& m = ring.meta(id);
  const UdpPayload udp = udp_payload(ring, id, payload);
  const bool segment_start = (m.flags & capture::kSlotSegmentStart) != 0 || !st.started;
  const bool codif = streams_[s]->spec().format == capture::StreamFormat::codif;

  std::array<std::byte, capture::codif::kHeaderBytes> header{};
  if (codif) {
    // The 64 CODIF header bytes, gathered if the split fell inside them.
    const auto [h0, h1] = udp.from(0);
    const std::size_t first = std::min(h0.size(), header.size());
    std::memcpy(header.data(), h0.data(), first);
    std::memcpy(header.data() + first, h1.data(), std::min(h1.size(), header.size() - first));
    if (!segment_start && options_.fill_gaps && m.frame_index > st.last_index + 1) {
      write_fill(s, header, static_cast<uint32_t>(udp.size()), st.last_index + 1,
                 m.frame_index - st.last_index - 1);
    }
  }
  const auto [d0, d1] = udp.from(codif ? capture::codif::kHeaderBytes : 0);
  if (w.raw) {
    w.raw->set_next_index(m.frame_index);
    check(w.raw->write_frame(header, d0, d1));
  }
  if (w.codifhdr) {
    w.codifhdr->set_next_index(m.frame_index);
    check(w.codifhdr->write_frame(header));
  }
  count_frame(s, m);
}

// A VDIF frame (doc/vdif.md): the VTP number, if any, is not written; fill frames are the
// header the missing frame would have had, invalid bit set, and zero data.
void CaptureWriter::write_vdif_frame(std::size_t s, SlotId id, std::span<const std::byte> payload) {
  StreamWriters& w = per_stream_[s];
  StreamWriteState& st = state_[s];
  const capture::StreamPipeline& sp = *streams_[s];
  const StreamRing& ring = sp.ring();
  const SlotMeta& m = ring.meta(id);
  const UdpPayload udp = udp_payload(ring, id, payload);
  const capture::VdifSpec& spec = sp.spec().vdif;
  const std::size_t skip = spec.vtp ? capture::vdif::kVtpBytes : 0;
  std::array<std::byte, capture::vdif::kHeaderBytes> header{};
  const auto [h0, h1] = udp.from(skip);  // gathered if the split fell inside the header
  const std::size_t first = std::min(h0.size(), header.size());
  std::memcpy(header.data(), h0.data(), first);
  std::memcpy(header.data() + first, h1.data(), std::min(h1.size(), header.size() - first));
  capture::vdif::Header h;
  capture::vdif::Timing t;
  // The frame was validated at capture, so this only recovers its header form and timing.
  if (!capture::vdif::decode(header, h) ||
      capture::vdif::validate(h, udp.size() - skip, spec.rate, t) != capture::vdif::Invalid::ok) {
    return count_frame(s, m);
  }
  const bool segment_start = (m.flags & capture::kSlotSegmentStart) != 0 || !st.started;
  if (!segment_start && options_.fill_gaps && m.frame_index > st.last_index + 1) {
    const uint64_t from = st.last_index + 1;
    const uint64_t count = m.frame_index - from;
    if (w.raw) {
      w.raw->set_next_index(from);
      check(w.raw->write_vdif_fill(h, t, from, count));
    }
    if (w.vdifhdr) {
      w.vdifhdr->set_next_index(from);
      check(w.vdifhdr->write_fill(h, t, from, count));
    }
  }
  const auto hdr = std::span<const std::byte>(header).first(h.header_bytes());
  const auto [d0, d1] = udp.from(skip + h.header_bytes());
  if (w.raw) {
    w.raw->set_next_index(m.frame_index);
    check(w.raw->write_vdif_frame(hdr, d0, d1));
  }
  if (w.vdifhdr) {
    w.vdifhdr->set_next_index(m.frame_index);
    check(w.vdifhdr->write_frame(hdr));
  }
  count_frame(s, m);
}

void CaptureWriter::count_frame(std::size_t s, const SlotMeta& m) {
  StreamWriteState& st = state_[s];
  st.started = true;
  st.last_index = m.frame_index;
  ++st.frames;
}

void CaptureWriter::write_fill(std::size_t s,
                               std::span<const std::byte, capture::codif::kHeaderBytes> header,
                               uint32_t udp_payload_bytes, uint64_t from, uint64_t count) {
  capture::codif::Header h;
  capture::codif::Timing t;
  // The frame was validated at capture, so this only recovers its timing.
  if (!capture::codif::decode(header, streams_[s]->spec().syncs, h) ||
      capture::codif::validate(h, udp_payload_bytes, t) != capture::codif::Invalid::ok) {
    return;
  }
  const capture::codif::Header first_missing = capture::codif::at_index(h, t, from);
  StreamWriters& w = per_stream_[s];
  if (w.raw) {
    w.raw->set_next_index(from);
    check(w.raw->write_fill(first_missing, t, count));
  }
  if (w.codifhdr) {
    w.codifhdr->set_next_index(from);
    check(w.codifhdr->write_fill(first_missing, t, count));
  }
}

void CaptureWriter::take_gap_events(std::size_t s) {
  StreamWriteState& st = state_[s];
  capture::GapEvent g;
  while (streams_[s]->sequencer().pop_gap(g)) {
    if (st.gaps.size() < options_.max_gaps_listed) {
      st.gaps.push_back(g);
    } else {
      ++st.gaps_not_listed;
    }
  }
}

void CaptureWriter::check_storage() {
  check_storage(whole_);
}

void CaptureWriter::check_storage(const WriterShard& shard) {
  for (std::size_t s : shard.streams) {
    StreamWriters& w = per_stream_[s];
    if (w.raw) check(w.raw->check_storage());
    if (w.codifhdr) check(w.codifhdr->check_storage());
    if (w.vdifhdr) check(w.vdifhdr->check_storage());
  }
  if (pcap_ && shard.pcap) check(pcap_->check_storage());
}

void CaptureWriter::flush() {
  flush(whole_);
}

void CaptureWriter::flush(const WriterShard& shard) {
  for (std::size_t s : shard.streams) {
    StreamWriters& w = per_stream_[s];
    if (w.raw) check(w.raw->flush());
    if (w.codifhdr) check(w.codifhdr->flush());
    if (w.vdifhdr) check(w.vdifhdr->flush());
  }
  if (pcap_ && shard.pcap) check(pcap_->flush());
}

void CaptureWriter::request_rotation() noexcept {
  request_rotation(whole_);
}

void CaptureWriter::request_rotation(const WriterShard& shard) noexcept {
  for (std::size_t s : shard.streams) {
    StreamWriters& w = per_stream_[s];
    if (w.raw) w.raw->request_rotation();
    if (w.codifhdr) w.codifhdr->request_rotation();
    if (w.vdifhdr) w.vdifhdr->request_rotation();
  }
  if (pcap_ && shard.pcap) pcap_->request_rotation();
}

Status CaptureWriter::close() {
  return close(whole_);
}

Status CaptureWriter::close(const WriterShard& shard) {
  Status first;
  // A failed flush or fsync at close is reported like any write error.
  auto keep = [&](Status s) {
    check(s);
    if (!s.ok() && first.ok()) first = s;
  };
  for (std::size_t s : shard.streams) {
    StreamWriters& w = per_stream_[s];
    if (w.raw) keep(w.raw->close());
    if (w.codifhdr) keep(w.codifhdr->close());
    if (w.vdifhdr) keep(w.vdifhdr->close());
  }
  if (pcap_ && shard.pcap) keep(pcap_->close());
  return first;
}

}  // namespace rocecap::writers
