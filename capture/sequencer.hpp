// Sequencer: per-stream frame accounting and time ordering (doc/codif.md, "Sequencing").
//
// Each decoded, validated CODIF header becomes an absolute frame index and a Decision. The
// sequencer also puts the frames back in time order before the writer sees them:
//
// Reorder window. The last W indices up to the highest seen (h) are "pending": a frame that
// arrives late but still lies in (h - W, h] is placed there, and a frame is delivered to the
// DeliverySink (in strictly increasing index order) only once it has left the window, i.e.
// when a frame >= index + W has arrived, or on flush(). The writer thus always sees a sorted
// stream and fills the index holes between consecutive deliveries with fill frames, whereas
// a writer-side reorder would need the writer to second-guess which late frames the
// sequencer had already dropped. The price is W frames of latency and W slots held here.
// The pending frames are a tag (the ring slot id) per index in a fixed array, so nothing is
// allocated or copied.
//
// Accounting, exact by construction:
//  - a forward jump from h to i counts i-h-1 frames lost at once (timely metrics);
//  - a late frame placed inside the window takes its index back out of lost (lost -= 1); the
//    gap it fell into is thereby split, because gap events are only emitted once the indices
//    they cover have left the window, as maximal runs of undelivered indices;
//  - a frame behind the window is a duplicate if the history bitmap says its index was
//    delivered, otherwise late_dropped (its index stays lost: it is a fill frame in the file);
//    beyond the history nothing is known and it counts as late_dropped.
// Hence at any time after flush(): lost == sum over segments of (h - first + 1) - delivered,
// which is the number of indices never delivered, == the sum of the gap event counts, == the
// number of fill frames a writer writes.
//
// Resynchronisation: a jump of more than resync_frames either way, or a change of period,
// frame size, frames per period, epoch, nchan or nbits, flushes everything pending and starts
// a new segment at the new frame (its delivery carries segment_start: no fill before it). It
// is counted once and reported in the Verdict for the caller to log. It needs confirmation:
// only the resync_confirm-th frame in a row off the current timeline that agrees with the one
// before it (same period, size, epoch, nchan, nbits; a later index, at most resync_frames on)
// starts the new segment. The frames before it are outliers: not placed, counted (stats()
// .outliers; the caller counts them as rejected frames), and the current timeline is
// untouched, so one frame with a wild `seconds` field neither moves the stream twice nor lands
// out of time order in the file. Any frame that fits the current timeline breaks the run. A
// real restart of the instrument thus costs resync_confirm - 1 counted frames.
//
// Threads: on_frame()/flush() on the capture thread; pop_gap() on one consumer thread;
// stats() on any thread. Never blocks, never allocates after construction.
#pragma once

#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "capture/codif/header.hpp"
#include "common/relaxed_counter.hpp"
#include "common/spsc_queue.hpp"

namespace rocecap::capture {

struct SequencerConfig {
  uint32_t reorder_window = 64;         // W >= 1 frames; 1 = no late frame is ever placed
  uint32_t history = 4096;              // power of two, >= 64 and >= W: duplicate memory
  uint64_t resync_frames = 1ull << 20;  // a jump beyond this (either way) restarts sequencing
  uint32_t resync_confirm = 3;          // frames in a row on a new timeline to resync; 1: at once
  uint32_t gap_capacity = 4096;         // gap events queued for the manifest
};

enum class Decision : uint8_t {
  first,         // the stream's first frame
  in_order,      // highest + 1
  gap,           // highest + n, n > 1: n - 1 frames lost
  late_placed,   // below the highest, inside the reorder window, not seen before: placed
  duplicate,     // its index was already delivered (or is pending)
  late_dropped,  // below the reorder window and not known to be delivered: dropped
  outlier,       // off the timeline, not (yet) confirmed by the frames after it: not placed
  resync,        // sequencing restarted at this frame (see ResyncReason)
  count_
};
inline constexpr std::size_t kDecisionCount = static_cast<std::size_t>(Decision::count_);
std::string_view to_string(Decision d) noexcept;
// Whether the sequencer kept the frame's tag (it will be delivered); otherwise the caller
// still owns the slot and recycles it.
// (The three that are not placed are adjacent: one range check per frame.)
constexpr bool placed(Decision d) noexcept {
  return d < Decision::duplicate || d > Decision::outlier;
}

enum class ResyncReason : uint8_t {
  none,
  jump_forward,
  jump_backward,
  period,
  frame_size,
  frames_per_period,
  epoch,
  nchan,
  nbits,
  count_
};
std::string_view to_string(ResyncReason r) noexcept;

struct Verdict {
  Decision decision = Decision::first;
  ResyncReason reason = ResyncReason::none;  // set when decision == resync or outlier
  uint64_t index = 0;                        // the frame's absolute index
};

// A maximal run of undelivered indices inside a segment (what fill frames stand for).
struct GapEvent {
  uint64_t first_index = 0;
  uint64_t count = 0;
  int64_t first_time_ns = 0;  // Unix ns of the first missing frame's start
};

struct Delivery {
  uint64_t index = 0;
  uint32_t tag = 0;            // what on_frame was given: the ring slot id
  bool segment_start = false;  // first frame of a segment: no fill frames before it
};

class DeliverySink {
 public:
  virtual ~DeliverySink() = default;
  virtual void deliver(const Delivery& d) noexcept = 0;
};

// A caller's note that the header and timing it passes, constant between the caller's own
// updates (a memo's), have the current segment's signature: the in-order path then compares one
// number instead of six fields. The caller resets it ({}) whenever that header or timing changes.
struct SignatureNote {
  uint64_t segment = 0;  // Sequencer's segment serial it was confirmed for; 0: none
};

struct SequencerStats {
  uint64_t received = 0;   // frames given to on_frame, outliers excepted
  uint64_t bytes = 0;      // their CODIF frame bytes (header + data)
  uint64_t delivered = 0;  // frames handed to the sink
  uint64_t lost = 0;       // indices skipped and not (yet) placed late
  uint64_t duplicate = 0;
  uint64_t late_placed = 0;
  uint64_t late_dropped = 0;
  uint64_t invalid = 0;  // frames with the CODIF invalid bit (also sequenced normally)
  uint64_t resync = 0;
  uint64_t outliers = 0;            // frames off the timeline, not placed (Decision::outlier)
  uint64_t gap_events = 0;          // emitted gap events
  uint64_t gap_events_dropped = 0;  // of those, not queued because the queue was full
  uint64_t first_index = 0;         // first frame of the run
  uint64_t last_index = 0;          // highest frame of the current segment
  int64_t first_time_ns = 0;        // start of those frames, Unix ns
  int64_t last_time_ns = 0;
};

class Sequencer {
 public:
  // Throws std::invalid_argument naming the bad field.
  Sequencer(const SequencerConfig& config, DeliverySink& sink);

  // Capture thread. `t` is what codif::validate gave for `h`; `tag` identifies the frame's
  // slot and comes back in a Delivery when placed(decision).
  [[gnu::always_inline]] Verdict on_frame(const codif::Header& h, const codif::Timing& t,
                                          uint32_t tag) noexcept {
    return on_frame_at(h, t, h.frame, h.seconds, tag);
  }
  // on_frame for the header `h` with `frame` and `seconds` in place of its own: the verbs
  // path passes its stream's memo header (capture/frame_memo.hpp) and the frame's word 0, so
  // the header is not copied per packet.
  // Inline for the common case (see in_order()); everything else goes to on_other().
  [[gnu::always_inline]] Verdict on_frame_at(const codif::Header& h, const codif::Timing& t,
                                             uint32_t frame, uint32_t seconds,
                                             uint32_t tag) noexcept {
    return on_frame_at(h, t, frame, seconds, tag, sink_);
  }
  // The same with this sequencer's own sink given as its own type: a final sink's deliver()
  // (RingPublisher's, StreamPipeline::publisher()) is then inlined instead of called through
  // the vtable, once per in-order frame. `sink` must be the sink the sequencer was built with.
  // With a `note` (SignatureNote), `h` and `t` are compared with the segment once per note.
  template <class Sink>
  [[gnu::always_inline]] Verdict on_frame_at(const codif::Header& h, const codif::Timing& t,
                                             uint32_t frame, uint32_t seconds, uint32_t tag,
                                             Sink& sink, SignatureNote* note = nullptr) noexcept {
    assert(static_cast<DeliverySink*>(&sink) == &sink_);
    const uint64_t index = codif::absolute_index(frame, seconds, t);
    // Once: the counters' atomic stores below make the compiler read commit_ again otherwise.
    const uint64_t window_end = commit_ + config_.reorder_window;
    if (!in_order(h, t, index, window_end, note)) [[unlikely]] {
      codif::Header whole = h;
      whole.frame = frame;
      whole.seconds = seconds;
      return on_other(whole, t, index, tag);
    }
    count_fast(h);
    if (window_end == index) deliver_oldest(sink);
    place(index, tag);
    fast_next_ = index + 1;
    note_last(frame, seconds);
    return {Decision::in_order, ResyncReason::none, index};
  }
  // on_frame without its fast path: the rules it must agree with (tests compare the two).
  Verdict on_frame_general(const codif::Header& h, const codif::Timing& t, uint32_t tag) noexcept {
    return on_other(h, t, codif::absolute_index(h, t), tag);
  }
  // Capture thread. Delivers every pending frame (at stop, or when the stream has been idle);
  // later frames at or below the highest then count as duplicate or late_dropped.
  void flush() noexcept;
  // Frames held in the reorder window, not yet delivered.
  uint64_t pending() const noexcept { return started_ ? fast_next_ - commit_ : 0; }

  // One consumer thread (writer / manifest). False when none is queued.
  bool pop_gap(GapEvent& out) noexcept { return gaps_.pop(out); }

  SequencerStats stats() const noexcept;  // any thread
  const SequencerConfig& config() const noexcept { return config_; }

 private:
  struct Signature {
    uint32_t period, data_words;
    uint64_t frames_per_period;
    uint8_t epoch, nbits;
    uint32_t nchan;
    bool operator==(const Signature&) const = default;
  };
  static Signature signature(const codif::Header& h, const codif::Timing& t) noexcept;
  ResyncReason changed(const Signature& s) const noexcept;

  // The frame right after the highest (fast_next_), of the same segment, with no gap open and
  // no resync being confirmed (fast_open_), and, when the window is full, its oldest frame
  // there to deliver. on_frame's fast path for it does exactly what on_other() would: count,
  // deliver that one frame, place, raise the highest (the one history bit advance() would
  // clear is set again by place()).
  [[gnu::always_inline]] bool in_order(const codif::Header& h, const codif::Timing& t,
                                       uint64_t index, uint64_t window_end,
                                       SignatureNote* note) const noexcept {
    if (index != fast_next_ || !fast_open_) return false;
    if (!same_signature(h, t, note)) return false;
    return window_end > index || (window_end == index && seen(commit_));
  }
  // Whether `h` and `t` have the segment's signature (a started segment's) and frame size
  // (count_fast() relies on it; a VDIF legacy header may keep data_words at another size);
  // noted in `note`.
  [[gnu::always_inline]] bool same_signature(const codif::Header& h, const codif::Timing& t,
                                             SignatureNote* note) const noexcept {
    if (note != nullptr && note->segment == segment_serial_) return true;
    if (t.period != sig_.period || h.data_words != sig_.data_words ||
        t.frames_per_period != sig_.frames_per_period || h.epoch != sig_.epoch ||
        h.nchan != sig_.nchan || h.nbits != sig_.nbits || t.header_bytes != timing_.header_bytes) {
      return false;
    }
    if (note != nullptr) note->segment = segment_serial_;
    return true;
  }
  // Bytes are not counted per frame: stats() gives received x the segment's frame size, plus
  // what earlier segments and frames of other sizes (odd_size_bytes) added (segment_bytes).
  // A frame of the segment's size.
  void count_fast(const codif::Header& h) noexcept {
    counters_.received.add();
    if (h.invalid) counters_.invalid.add();
  }
  void count_received(const codif::Header& h, const codif::Timing& t) noexcept {
    const uint64_t bytes = h.payload_bytes() + t.header_bytes;
    if (bytes == seg_frame_bytes_) [[likely]]
      counters_.received.add();
    else
      count_odd_size(bytes);
    if (h.invalid) counters_.invalid.add();
  }
  void count_odd_size(uint64_t bytes) noexcept;  // under seg_version_, with the difference
  // Delivers commit_, which is seen, with no gap open before it.
  void deliver_oldest() noexcept { deliver_oldest(sink_); }
  template <class Sink>
  [[gnu::always_inline]] void deliver_oldest(Sink& sink) noexcept {
    sink.deliver(Delivery{commit_, tags_[commit_ & mask_], commit_ == seg_first_});
    counters_.delivered.add();
    ++commit_;
  }
  // The highest frame's time stamp (its index and time are computed when read, in stats()).
  void note_last(uint32_t frame, uint32_t seconds) noexcept {
    counters_.last_stamp.set(uint64_t{seconds} << 32 | frame);
  }
  // A new segment's epoch, period and frame size for stats(), and its first frame as the last.
  void note_segment(const codif::Header& h, const codif::Timing& t) noexcept;
  // Under seg_version_: received, bytes, last_index and last_time_ns.
  void segment_counts(SequencerStats& s) const noexcept;
  Verdict on_other(const codif::Header& h, const codif::Timing& t, uint64_t index,
                   uint32_t tag) noexcept;  // decide(), then refresh_fast()
  Verdict decide(const codif::Header& h, const codif::Timing& t, uint64_t index,
                 uint32_t tag) noexcept;  // the general rules

  void start_segment(const codif::Header& h, const codif::Timing& t, uint64_t index,
                     uint32_t tag) noexcept;
  // A frame off the current timeline: whether it confirms a resync (see the file comment).
  bool confirms_resync(const Signature& s, uint64_t index) noexcept;
  Decision advance(const codif::Header& h, uint64_t index, uint32_t tag) noexcept;
  Decision behind(uint64_t index, uint32_t tag) noexcept;
  void commit_until(uint64_t end) noexcept;  // delivers / accounts indices [commit_, end)
  void extend_gap(uint64_t first, uint64_t count) noexcept;
  void close_gap() noexcept;
  void place(uint64_t index, uint32_t tag) noexcept {
    seen_bits_[(index & mask_) / 64] |= uint64_t{1} << (index % 64);
    tags_[index & mask_] = tag;
  }
  bool seen(uint64_t index) const noexcept {
    return (seen_bits_[(index & mask_) / 64] >> (index % 64)) & 1u;
  }
  void forget_range(uint64_t first, uint64_t last) noexcept;  // clears bits for [first, last]
  // After every change the fast path does not make itself (the end of on_other; flush()
  // changes nothing it depends on): in_order()'s first test reads it instead of started_,
  // gap_count_ and candidates_.
  void refresh_fast() noexcept { fast_open_ = started_ && (gap_count_ | candidates_) == 0; }
  uint64_t high() const noexcept { return fast_next_ - 1; }  // the highest index placed

  SequencerConfig config_;
  DeliverySink& sink_;
  uint64_t mask_;
  std::unique_ptr<uint64_t[]> seen_bits_;  // history bits: index delivered or pending
  std::unique_ptr<uint32_t[]> tags_;       // tag of each pending index
  common::SpscQueue<GapEvent> gaps_;

  uint64_t fast_next_ = 1;  // the highest index placed + 1: the next in order
  bool fast_open_ = false;  // started_, no gap open, no resync candidates
  bool started_ = false;
  Signature sig_{};
  uint64_t segment_serial_ = 0;  // bumped with each sig_ (start_segment): what notes hold
  codif::Header ref_{};          // a header of the current segment: times of gap events
  codif::Timing timing_{};
  uint64_t seg_first_ = 0;
  uint64_t commit_ = 0;  // next index to deliver or count as a gap
  uint64_t gap_first_ = 0;
  uint64_t gap_count_ = 0;   // open gap, emitted when a delivery or a flush closes it
  uint32_t candidates_ = 0;  // frames in a row off the timeline, agreeing with each other
  Signature candidate_sig_{};
  uint64_t candidate_last_ = 0;  // the index of the last of them

  struct alignas(common::kCacheLine) Counters {
    common::RelaxedCounter received, delivered, lost, duplicate, late_placed, late_dropped, invalid,
        resync, outliers, gap_events, gap_events_dropped, first_index, first_time_ns,
        last_stamp,      // the highest frame's seconds << 32 | frame
        odd_size_bytes;  // sum of (frame bytes - the segment's) over frames of another size
  } counters_;
  uint64_t seg_frame_bytes_ = 0;  // the current segment's frame size (header + data)
  // What stats() needs besides last_stamp and received to compute last_index, last_time_ns
  // and bytes, set per segment under a sequence lock (odd while it is written), so that a
  // reader on another thread never pairs one segment's stamp or count with another's epoch,
  // period or size.
  std::atomic<uint64_t> seg_version_{0};
  common::RelaxedCounter seg_epoch_, seg_period_, seg_frames_per_period_, seg_frame_bytes_pub_,
      segment_bytes_,     // bytes of the frames received before the segment began
      segment_received_;  // received when it began
};

}  // namespace rocecap::capture
