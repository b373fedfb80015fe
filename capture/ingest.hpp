// The one entry point of the capture core for every transport (capture/packet_source.hpp):
// parse -> classify -> CODIF decode and validate -> place in the stream's ring slot -> sequence
// -> publish. Copying transports hand it whole frames (on_frame: copied into the next free slot,
// header slot up to the split, payload slot after it, as the NIC would scatter); zero-copy
// transports hand it slots the NIC already filled (on_slot). One Ingest per interface, driven by
// that interface's capture thread. It knows nothing of any transport.
//
// Every frame ends in exactly one place: placed in a stream (sequencer counters), rejected
// with a reason (per-interface counters below), dropped for want of a slot (the ring's
// ring_full_drops), or counted by the sequencer as duplicate / late_dropped.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "capture/arrival_queue.hpp"
#include "capture/classifier.hpp"
#include "capture/frame_check.hpp"
#include "capture/frame_memo.hpp"
#include "capture/reject_reason.hpp"
#include "capture/stream_pipeline.hpp"
#include "common/relaxed_counter.hpp"

namespace rocecap::capture {

class Ingest final {
 public:
  // `streams` are this interface's streams (not owned; they outlive the Ingest).
  // With record_arrivals, every placed frame is also queued in arrival order (arrivals()).
  Ingest(std::vector<StreamPipeline*> streams, bool record_arrivals);

  // A copying transport's frame: `captured` bytes of a frame of `wire_bytes` on the wire.
  // Must not block or throw (capture thread).
  void on_frame(std::span<const std::byte> captured, std::size_t wire_bytes,
                int64_t timestamp_ns) noexcept;
  // As on_frame, but a placed frame's payload stays in `captured` (lent to the slot, see
  // StreamRing::lend) when the stream's ring takes loans; its headers up to the split are
  // still copied into the header slot, so writers see the same slot either way. Whether it
  // lent (one loan taken on `loans`).
  bool on_frame_lent(std::span<const std::byte> captured, std::size_t wire_bytes,
                     int64_t timestamp_ns, BlockLoans& loans) noexcept;

  // The zero-copy path (verbs): the NIC already scattered a frame of `byte_len` bytes into
  // `slot` of stream `stream` (header slot up to the split, payload slot after it), a slot
  // the producer had taken from that stream's ring. The same checks as on_frame decide; a
  // slot that is not placed is given back to the ring (to be posted again).
  // `flags` is added to the slot's SlotFlag bits (kSlotHwTimestamp).
  // Inline (defined below): its common case, a frame both memos accept, in order, is then
  // part of the transport's poll loop, without a call and its register saves per packet.
  [[gnu::always_inline]] inline void on_slot(uint32_t stream, SlotId slot, uint32_t byte_len,
                                             int64_t timestamp_ns, uint16_t flags) noexcept;
  // A frame the NIC could not place (longer than the posted slot): counted as oversize.
  void count_oversize() noexcept {
    seen_.add();
    reject(kRejectOversize);
  }

  // Before capture starts: frames whose time (CODIF/VDIF) is before `unix_ns` are rejected as
  // before_start until each stream's first frame at or after it (config run.start); udp-format
  // streams have no time and are not held back.
  void set_start(int64_t unix_ns) noexcept;

  // Capture thread. A coarse clock for idle detection, advanced once per batch, so no
  // per-packet clock read is needed.
  void set_tick(int64_t tick) noexcept { tick_ = tick; }
  // Capture thread. Delivers the frames held in the reorder window of every stream that has
  // received nothing since `idle_since` (so a quiet stream's last frames reach the files), and
  // settles a quiet VTP flow's pending numbers as skipped (VtpState::settle).
  void flush_idle(int64_t idle_since) noexcept;
  // Capture thread, at stop: delivers everything held; every pending VTP number is skipped.
  void flush_all() noexcept;

  // The writer side of the arrival queue (null without record_arrivals).
  ArrivalQueue* arrivals() noexcept { return arrivals_ ? &*arrivals_ : nullptr; }

  const std::vector<StreamPipeline*>& streams() const noexcept { return streams_; }
  uint64_t rejected(std::size_t reason) const noexcept { return rejected_[reason].get(); }
  uint64_t frames_seen() const noexcept { return seen_.get(); }
  uint64_t arrival_overflows() const noexcept { return arrival_overflows_.get(); }

 private:
  // 14 + 2 VLAN tags + 60 IPv4 + 8 UDP + 64 CODIF < 256: the most a check reads.
  static constexpr std::size_t kJoinBytes = 256;

  void reject(std::size_t reason) noexcept { rejected_[reason].add(); }
  // on_slot for a frame the memos did not accept: checked in full (check_frame), out of line.
  [[gnu::noinline]] void on_slot_checked(uint32_t stream, SlotId slot, uint32_t byte_len,
                                         int64_t timestamp_ns, uint16_t flags) noexcept;
  // A frame before run.start (config): given back and counted. Else the stream stops waiting.
  [[gnu::noinline]] bool held_before_start(StreamPipeline& sp, SlotId slot, const codif::Header& h,
                                           const codif::Timing& t, uint32_t frame,
                                           uint32_t seconds) noexcept;
  bool flow_quiet(const StreamPipeline& first, int64_t idle_since) const noexcept;
  // check_frame on the header slot's `head` bytes followed by the payload slot's.
  std::size_t check_joined(const StreamRing& ring, SlotId slot, std::size_t head, uint32_t byte_len,
                           Checked& c) const noexcept;
  void record_arrival(uint32_t stream, SlotId slot) noexcept {
    // A writer pops a slot's publication before it drains arrivals, so the arrival must be
    // queued no later than the publication.
    if (arrivals_ && !arrivals_->push(ArrivalRef{stream, slot})) arrival_overflows_.add();
  }
  // Copies the frame into a slot, or lends its payload when `loans` is given and the ring
  // takes loans; whether it lent.
  bool place(uint32_t stream, StreamPipeline& sp, std::span<const std::byte> frame,
             const Checked& c, int64_t timestamp_ns, BlockLoans* loans) noexcept;
  // Fills the slot's meta from the checked frame, sequences and publishes (or gives back).
  // These three are inlined into their callers: a call per packet costs more than the code
  // they share.
  [[gnu::always_inline]] inline void settle(uint32_t stream, StreamPipeline& sp, SlotId slot,
                                            const Checked& c, int64_t timestamp_ns,
                                            uint16_t flags) noexcept;
  // The slot's lengths, offsets and time stamp from the frame's headers.
  [[gnu::always_inline]] static inline SlotMeta& fill_meta(StreamPipeline& sp, SlotId slot,
                                                           const net::UdpFrame& f,
                                                           int64_t timestamp_ns) noexcept;
  // The same for a frame the head memo accepted (StreamPipeline::head_memo's shape).
  [[gnu::always_inline]] static inline SlotMeta& fill_meta(StreamPipeline& sp, SlotId slot,
                                                           int64_t timestamp_ns) noexcept;
  // A sequenced frame (CODIF, or VDIF seen as CODIF) whose header is `h` but for `frame` and
  // `seconds`: held back before run.start, sequenced, recorded, or given back. `note`: the
  // head memo's, when `h` and `t` are its memo's (Sequencer::on_frame_at); else null.
  [[gnu::always_inline]] inline void sequence(uint32_t stream, StreamPipeline& sp, SlotId slot,
                                              SlotMeta& m, const codif::Header& h,
                                              const codif::Timing& t, uint32_t frame,
                                              uint32_t seconds, uint16_t flags,
                                              SignatureNote* note) noexcept;

  std::vector<StreamPipeline*> streams_;
  StreamClassifier classifier_;
  std::optional<ArrivalQueue> arrivals_;
  std::array<common::RelaxedCounter, kRejectReasonCount> rejected_{};
  common::RelaxedCounter seen_;
  common::RelaxedCounter arrival_overflows_;
  int64_t tick_ = 0;
  int64_t start_ns_ = 0;  // run.start; used only by streams still awaiting_start
  // on_slot's check result, reused: a fresh Checked per packet costs its zero-initialisation,
  // and check_frame writes every field a caller reads when it accepts a frame.
  Checked checked_;
};

inline SlotMeta& Ingest::fill_meta(StreamPipeline& sp, SlotId slot, int64_t timestamp_ns) noexcept {
  SlotMeta& m = sp.ring().meta(slot);
  m = sp.head_memo.shape;
  m.timestamp_ns = timestamp_ns;
  return m;
}

inline void Ingest::sequence(uint32_t stream, StreamPipeline& sp, SlotId slot, SlotMeta& m,
                             const codif::Header& h, const codif::Timing& t, uint32_t frame,
                             uint32_t seconds, uint16_t flags, SignatureNote* note) noexcept {
  if (sp.awaiting_start && held_before_start(sp, slot, h, t, frame, seconds)) [[unlikely]]
    return;
  m.flags = static_cast<uint16_t>(flags | (h.invalid ? kSlotInvalidBit : 0));
  // The sequencer holds a new frame in its reorder window (it is never delivered within this
  // call), so its index, flag and arrival record all precede its publication.
  const Verdict v = sp.sequencer().on_frame_at(h, t, frame, seconds, slot, sp.publisher(), note);
  m.frame_index = v.index;
  if (!placed(v.decision)) [[unlikely]] {
    sp.ring().give_back(slot);
    // Duplicates and late drops are the stream's own counts; an outlier never became part of
    // the stream (the sequencer does not count it as received), so it is a rejected frame.
    if (v.decision == Decision::outlier) reject(kRejectTimelineOutlier);
    return;
  }
  if (v.decision == Decision::late_placed) m.flags |= kSlotLate;
  record_arrival(stream, slot);
}

inline void Ingest::on_slot(uint32_t stream, SlotId slot, uint32_t byte_len, int64_t timestamp_ns,
                            uint16_t flags) noexcept {
  seen_.add();
  StreamPipeline& sp = *streams_[stream];
  const std::byte* slot_head = sp.ring().header(slot).data();
  // The common case (capture/frame_memo.hpp): check_frame's result, read in place from the
  // stream's memos (the frame's header is the memo's but for word 0), both memos tested at once
  // through the head memo. For a VDIF frame of the flow's own stream, its VTP number is noted
  // here, once, as check_vdif notes it on the general lane. One call of sequence() for both
  // formats: it is inlined, and a second copy pushed the sequencer's own steps out of line.
  const codif::Header* memo_header = nullptr;
  const codif::Timing* memo_timing = nullptr;
  memo::FrameTime ft;
  if (memo::head_codif_hit(sp, slot_head, byte_len, ft)) [[likely]] {
    memo_header = &sp.codif_memo.header;
    memo_timing = &sp.codif_memo.timing;
  } else if (memo::VdifTime vt; memo::head_vdif_hit(sp, slot_head, byte_len, vt)) {
    if (sp.head_memo.vtp) sp.vtp.note(vt.psn);  // the same flag as the stream spec's
    ft = {vt.frame, vt.seconds};
    memo_header = &sp.vdif_memo.header;
    memo_timing = &sp.vdif_memo.timing;
  } else {
    return on_slot_checked(stream, slot, byte_len, timestamp_ns, flags);
  }
  sp.last_arrival_tick = tick_;
  SlotMeta& m = fill_meta(sp, slot, timestamp_ns);
  sequence(stream, sp, slot, m, *memo_header, *memo_timing, ft.frame, ft.seconds, flags,
           &sp.head_memo.signature);
}

}  // namespace rocecap::capture
