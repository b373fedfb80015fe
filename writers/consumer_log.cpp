#include "writers/consumer_log.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "capture/codif/header.hpp"
#include "capture/vdif/header.hpp"
#include "writers/fill.hpp"
#include "writers/vdif_header_writer.hpp"

namespace rocecap::writers {
namespace abi = consumer::abi;
using capture::SlotId;
using capture::SlotMeta;

namespace {

constexpr std::size_t round_up(std::size_t n, std::size_t unit) {
  return (n + unit - 1) / unit * unit;
}

std::size_t generations_offset() {
  return sizeof(abi::ControlHeader);
}
std::size_t log_offset(uint32_t slots) {
  return round_up(generations_offset() + std::size_t{slots} * sizeof(uint64_t), 64);
}
std::size_t control_bytes(uint32_t slots, uint32_t capacity) {
  return log_offset(slots) + std::size_t{capacity} * sizeof(abi::Descriptor);
}

const ConsumerLogOptions& checked(const ConsumerLogOptions& o) {
  if (!std::has_single_bit(o.log_capacity) || o.log_capacity < 16 || o.log_capacity > (1u << 24))
    throw std::invalid_argument("consumer log: " + std::to_string(o.log_capacity) +
                                " descriptors, needs a power of two from 16 to 2^24");
  return o;
}

capture::memory::HostMemoryOptions control_memory() {
  capture::memory::HostMemoryOptions m;
  m.huge_pages = capture::memory::Want::no;  // small, and read by other processes
  return m;
}

uint32_t format_code(capture::StreamFormat f) {
  switch (f) {
    case capture::StreamFormat::codif:
      return 0;
    case capture::StreamFormat::udp:
      return 1;
    case capture::StreamFormat::vdif:
      return 2;
  }
  return 1;
}

// Fill frame `index`: no slot, zero data of `data_bytes` (the caller writes its header).
void set_fill(abi::Descriptor& d, uint64_t index, std::size_t data_bytes) noexcept {
  d.frame_index = index;
  d.timestamp_ns = 0;
  d.generation = 0;
  d.slot = abi::kNoSlot;
  d.flags = static_cast<uint16_t>(abi::kFill | abi::kInvalid);
  d.data0_off = d.data0_len = d.data1_off = 0;
  d.data1_len = static_cast<uint32_t>(data_bytes);
  d.retention_pos = 0;
}

}  // namespace

ConsumerLog::ConsumerLog(capture::StreamPipeline& stream, const ConsumerLogOptions& options)
    : stream_(stream),
      options_(checked(options)),
      control_(control_bytes(stream.ring().slots(), options.log_capacity), control_memory()) {
  capture::StreamRing& ring = stream.ring();
  std::byte* base = control_.data();
  header_ = new (base) abi::ControlHeader{};
  auto* gens = reinterpret_cast<std::atomic<uint64_t>*>(base + generations_offset());
  for (uint32_t i = 0; i < ring.slots(); ++i)
    new (gens + i) std::atomic<uint64_t>(0);
  log_ = reinterpret_cast<abi::Descriptor*>(base + log_offset(ring.slots()));
  for (uint32_t i = 0; i < options_.log_capacity; ++i) {
    new (log_ + i) abi::Descriptor{};
    log_[i].seq.store(abi::kWriting, std::memory_order_relaxed);  // nothing at position 0 yet
  }
  abi::ControlHeader& h = *header_;
  h.magic = abi::kMagic;
  h.version = abi::kVersion;
  h.header_size = sizeof(abi::ControlHeader);
  h.slots = ring.slots();
  h.log_capacity = options_.log_capacity;
  h.header_stride = ring.header_stride();
  h.payload_stride = ring.payload_stride();
  h.header_slab_bytes = ring.header_memory().size();
  h.payload_slab_bytes = ring.payload_memory().size();
  h.payload_memory = ring.payload_kind() == capture::memory::MemoryKind::gpu ? 1 : 0;
  h.format = format_code(stream.spec().format);
  h.generations_offset = generations_offset();
  h.log_offset = log_offset(ring.slots());
  h.control_bytes = control_bytes(ring.slots(), options_.log_capacity);
  h.write_pos.store(0, std::memory_order_release);
  ring.set_generations(gens);
}

uint64_t ConsumerLog::published() const noexcept {
  return header_->write_pos.load(std::memory_order_acquire);
}

void ConsumerLog::end() noexcept {
  header_->state.store(abi::kEnded, std::memory_order_release);
}

// A sequence lock per descriptor: seq says "being written" before any field changes and the
// position after all of them, so a reader that sees its position twice read a whole entry.
abi::Descriptor* ConsumerLog::next_descriptor() noexcept {
  abi::Descriptor* d = &log_[pos_ & (options_.log_capacity - 1)];
  d->seq.store(abi::kWriting, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  return d;
}

void ConsumerLog::commit(abi::Descriptor* d) noexcept {
  if (pos_ == 0) header_->frame_index_base.store(d->frame_index, std::memory_order_relaxed);
  d->seq.store(pos_, std::memory_order_release);
  ++pos_;
  header_->write_pos.store(pos_, std::memory_order_release);
}

void ConsumerLog::publish(std::span<const SlotId> ids, uint64_t first_retention_pos) noexcept {
  if (ids.empty()) return;
  // A consumer maps the slab, never a kernel ring block a zero-copy source lent.
  stream_.ring().take_home(ids);
  for (std::size_t k = 0; k < ids.size(); ++k) {
    const uint64_t rpos = first_retention_pos + k;
    switch (stream_.spec().format) {
      case capture::StreamFormat::codif:
        publish_codif(ids[k], rpos);
        break;
      case capture::StreamFormat::vdif:
        publish_vdif(ids[k], rpos);
        break;
      case capture::StreamFormat::udp:
        publish_udp(ids[k], rpos);
        break;
    }
    const SlotMeta& m = stream_.ring().meta(ids[k]);
    started_ = true;
    last_index_ = m.frame_index;
  }
}

// Header and data of a received frame; the data starts at wire offset `data_at` and ends with
// the frame (header slot bytes, then payload slot bytes).
void ConsumerLog::frame(SlotId id, uint64_t retention_pos, std::size_t data_at,
                        std::span<const std::byte> header) noexcept {
  const capture::StreamRing& ring = stream_.ring();
  const SlotMeta& m = ring.meta(id);
  const std::size_t split = m.header_bytes;
  const std::size_t end = std::size_t{m.header_bytes} + m.payload_bytes;
  abi::Descriptor* d = next_descriptor();
  d->frame_index = m.frame_index;
  d->timestamp_ns = m.timestamp_ns;
  d->generation = ring.generation(id);
  d->slot = id;
  d->flags = static_cast<uint16_t>(m.flags & 0xFF);
  d->header_len = static_cast<uint16_t>(std::min(header.size(), sizeof d->header));
  std::memcpy(d->header, header.data(), d->header_len);
  const std::size_t at = std::min(data_at, end);
  d->data0_off = static_cast<uint32_t>(std::min(at, split));
  d->data0_len = static_cast<uint32_t>(at < split ? std::min(end, split) - at : 0);
  d->data1_off = static_cast<uint32_t>(at > split ? at - split : 0);
  d->data1_len = static_cast<uint32_t>(end > std::max(at, split) ? end - std::max(at, split) : 0);
  d->retention_pos = retention_pos;
  commit(d);
}

void ConsumerLog::publish_codif(SlotId id, uint64_t retention_pos) noexcept {
  namespace codif = capture::codif;
  const capture::StreamRing& ring = stream_.ring();
  const SlotMeta& m = ring.meta(id);
  const std::size_t at = m.udp_payload_offset;
  // The split is at least the CODIF header's end (capture.header_split), so it is here whole.
  if (at + codif::kHeaderBytes > m.header_bytes) return;
  const auto hdr = std::span<const std::byte>(ring.header(id)).subspan(at, codif::kHeaderBytes);
  const bool segment_start = (m.flags & capture::kSlotSegmentStart) != 0 || !started_;
  if (!segment_start && options_.fill_gaps && m.frame_index > last_index_ + 1) {
    codif::Header h;
    codif::Timing t;
    const std::size_t udp_bytes = std::size_t{m.header_bytes} + m.payload_bytes - at;
    // As CaptureWriter::write_fill: the frame was validated at capture; this recovers timing.
    if (codif::decode(hdr, stream_.spec().syncs, h) &&
        codif::validate(h, udp_bytes, t) == codif::Invalid::ok) {
      const uint64_t from = last_index_ + 1;
      const codif::Header first = codif::at_index(h, t, from);
      for (uint64_t i = 0; i < m.frame_index - from; ++i) {
        abi::Descriptor* d = next_descriptor();
        set_fill(*d, from + i, first.payload_bytes());
        codif::encode(fill_header(first, t, i),
                      std::span<std::byte, codif::kHeaderBytes>(
                          reinterpret_cast<std::byte*>(d->header), codif::kHeaderBytes));
        d->header_len = codif::kHeaderBytes;
        commit(d);
      }
    }
  }
  frame(id, retention_pos, at + codif::kHeaderBytes, hdr);
}

void ConsumerLog::publish_vdif(SlotId id, uint64_t retention_pos) noexcept {
  namespace vdif = capture::vdif;
  const capture::StreamRing& ring = stream_.ring();
  const SlotMeta& m = ring.meta(id);
  const capture::VdifSpec& spec = stream_.spec().vdif;
  const std::size_t at = m.udp_payload_offset + (spec.vtp ? vdif::kVtpBytes : 0);
  const std::size_t end = std::size_t{m.header_bytes} + m.payload_bytes;
  if (at + vdif::kHeaderBytes > m.header_bytes || end < at) return;
  const auto bytes = std::span<const std::byte>(ring.header(id)).subspan(at, vdif::kHeaderBytes);
  vdif::Header h;
  vdif::Timing t;
  // As CaptureWriter::write_vdif_frame: a frame that does not decode is not written.
  if (!vdif::decode(bytes, h) || vdif::validate(h, end - at, spec.rate, t) != vdif::Invalid::ok)
    return;
  const bool segment_start = (m.flags & capture::kSlotSegmentStart) != 0 || !started_;
  if (!segment_start && options_.fill_gaps && m.frame_index > last_index_ + 1) {
    std::array<std::byte, vdif::kHeaderBytes> fill{};
    for (uint64_t index = last_index_ + 1; index < m.frame_index; ++index) {
      abi::Descriptor* d = next_descriptor();
      set_fill(*d, index, h.payload_bytes());
      vdif::encode(vdif_fill_header(h, t, index), fill);
      d->header_len = static_cast<uint16_t>(h.header_bytes());
      std::memcpy(d->header, fill.data(), d->header_len);
      commit(d);
    }
  }
  frame(id, retention_pos, at + h.header_bytes(), bytes.first(h.header_bytes()));
}

// Format udp: the raw file's record is 64 zero bytes and the UDP payload (RawWriter).
void ConsumerLog::publish_udp(SlotId id, uint64_t retention_pos) noexcept {
  static constexpr std::array<std::byte, 64> kZeros{};
  frame(id, retention_pos, stream_.ring().meta(id).udp_payload_offset, kZeros);
}

}  // namespace rocecap::writers
