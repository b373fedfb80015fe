#include "capture/sequencer.hpp"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>

namespace rocecap::capture {
namespace {

const SequencerConfig& checked(const SequencerConfig& c) {
  auto bad = [](const char* what) {
    throw std::invalid_argument(std::string("sequencer config: ") + what);
  };
  if (c.reorder_window == 0) bad("reorder_window must be at least 1");
  if (!std::has_single_bit(c.history) || c.history < 64)
    bad("history must be a power of two >= 64");
  if (c.history < c.reorder_window) bad("history must be >= reorder_window");
  if (c.resync_frames == 0) bad("resync_frames must be positive");
  if (c.resync_confirm == 0) bad("resync_confirm must be at least 1");
  if (c.gap_capacity == 0) bad("gap_capacity must be positive");
  return c;
}

}  // namespace

std::string_view to_string(Decision d) noexcept {
  switch (d) {
    case Decision::first:
      return "first";
    case Decision::in_order:
      return "in_order";
    case Decision::gap:
      return "gap";
    case Decision::late_placed:
      return "late_placed";
    case Decision::duplicate:
      return "duplicate";
    case Decision::late_dropped:
      return "late_dropped";
    case Decision::resync:
      return "resync";
    case Decision::outlier:
      return "outlier";
    case Decision::count_:
      break;
  }
  return "unknown";
}

std::string_view to_string(ResyncReason r) noexcept {
  switch (r) {
    case ResyncReason::none:
      return "none";
    case ResyncReason::jump_forward:
      return "jump_forward";
    case ResyncReason::jump_backward:
      return "jump_backward";
    case ResyncReason::period:
      return "period";
    case ResyncReason::frame_size:
      return "frame_size";
    case ResyncReason::frames_per_period:
      return "frames_per_period";
    case ResyncReason::epoch:
      return "epoch";
    case ResyncReason::nchan:
      return "nchan";
    case ResyncReason::nbits:
      return "nbits";
    case ResyncReason::count_:
      break;
  }
  return "unknown";
}

Sequencer::Sequencer(const SequencerConfig& config, DeliverySink& sink)
    : config_(checked(config)),
      sink_(sink),
      mask_(config.history - 1),
      seen_bits_(std::make_unique<uint64_t[]>(config.history / 64)),
      tags_(std::make_unique<uint32_t[]>(config.history)),
      gaps_(config.gap_capacity) {}

Sequencer::Signature Sequencer::signature(const codif::Header& h, const codif::Timing& t) noexcept {
  return Signature{t.period, h.data_words, t.frames_per_period, h.epoch, h.nbits, h.nchan};
}

ResyncReason Sequencer::changed(const Signature& s) const noexcept {
  if (s.period != sig_.period) return ResyncReason::period;
  if (s.data_words != sig_.data_words) return ResyncReason::frame_size;
  if (s.frames_per_period != sig_.frames_per_period) return ResyncReason::frames_per_period;
  if (s.epoch != sig_.epoch) return ResyncReason::epoch;
  if (s.nchan != sig_.nchan) return ResyncReason::nchan;
  if (s.nbits != sig_.nbits) return ResyncReason::nbits;
  return ResyncReason::none;
}

bool Sequencer::confirms_resync(const Signature& s, uint64_t index) noexcept {
  const bool agrees = candidates_ != 0 && s == candidate_sig_ && index > candidate_last_ &&
                      index - candidate_last_ <= config_.resync_frames;
  candidates_ = agrees ? candidates_ + 1 : 1;
  candidate_sig_ = s;
  candidate_last_ = index;
  if (candidates_ < config_.resync_confirm) return false;
  candidates_ = 0;
  return true;
}

Verdict Sequencer::on_other(const codif::Header& h, const codif::Timing& t, uint64_t index,
                            uint32_t tag) noexcept {
  const Verdict v = decide(h, t, index, tag);
  refresh_fast();
  return v;
}

Verdict Sequencer::decide(const codif::Header& h, const codif::Timing& t, uint64_t index,
                          uint32_t tag) noexcept {
  if (!started_) {
    count_received(h, t);
    start_segment(h, t, index, tag);
    return {Decision::first, ResyncReason::none, index};
  }
  const Signature sig = signature(h, t);
  ResyncReason reason = changed(sig);
  if (reason == ResyncReason::none && index > high() && index - high() > config_.resync_frames)
    reason = ResyncReason::jump_forward;
  if (reason == ResyncReason::none && index < high() && high() - index > config_.resync_frames)
    reason = ResyncReason::jump_backward;
  if (reason == ResyncReason::none) {
    candidates_ = 0;  // the current timeline goes on: whatever was off it stays an outlier
  } else if (!confirms_resync(sig, index)) {
    counters_.outliers.add();
    return {Decision::outlier, reason, index};
  }
  count_received(h, t);
  if (reason != ResyncReason::none) {
    flush();
    counters_.resync.add();
    start_segment(h, t, index, tag);
    return {Decision::resync, reason, index};
  }
  if (index > high()) return {advance(h, index, tag), ResyncReason::none, index};
  return {behind(index, tag), ResyncReason::none, index};
}

void Sequencer::start_segment(const codif::Header& h, const codif::Timing& t, uint64_t index,
                              uint32_t tag) noexcept {
  if (!started_) {
    counters_.first_index.set(index);
    counters_.first_time_ns.set(static_cast<uint64_t>(codif::frame_start_unix_ns(h, t)));
  }
  started_ = true;
  sig_ = signature(h, t);
  ++segment_serial_;  // every SignatureNote of the old signature is stale
  ref_ = h;
  timing_ = t;
  seg_first_ = commit_ = index;
  fast_next_ = index + 1;
  gap_count_ = 0;
  std::fill_n(seen_bits_.get(), config_.history / 64, uint64_t{0});
  place(index, tag);
  note_segment(h, t);
}

// After count_received() counted the segment's first frame at the old segment's size (and the
// difference to its own in odd_size_bytes): that frame closes the old segment's bytes.
void Sequencer::note_segment(const codif::Header& h, const codif::Timing& t) noexcept {
  const uint64_t version = seg_version_.load(std::memory_order_relaxed);
  seg_version_.store(version + 1, std::memory_order_relaxed);  // odd: being written
  std::atomic_thread_fence(std::memory_order_release);
  seg_epoch_.set(h.epoch);
  seg_period_.set(t.period);
  seg_frames_per_period_.set(t.frames_per_period);
  const uint64_t received = counters_.received.get();
  segment_bytes_.set(segment_bytes_.get() +
                     (received - segment_received_.get()) * seg_frame_bytes_);
  segment_received_.set(received);
  seg_frame_bytes_ = h.payload_bytes() + t.header_bytes;
  seg_frame_bytes_pub_.set(seg_frame_bytes_);
  note_last(h.frame, h.seconds);
  seg_version_.store(version + 2, std::memory_order_release);
}

// Received and the difference in one step for stats(): it reads both under seg_version_.
void Sequencer::count_odd_size(uint64_t bytes) noexcept {
  const uint64_t version = seg_version_.load(std::memory_order_relaxed);
  seg_version_.store(version + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  counters_.received.add();
  counters_.odd_size_bytes.add(bytes - seg_frame_bytes_);  // modulo 2^64: may be "negative"
  seg_version_.store(version + 2, std::memory_order_release);
}

Decision Sequencer::advance(const codif::Header& h, uint64_t index, uint32_t tag) noexcept {
  const uint64_t old_high = high();
  const uint64_t window_start =
      index + 1 > config_.reorder_window ? index + 1 - config_.reorder_window : 0;
  // Commit before forgetting: the bits about to be cleared alias the oldest pending indices.
  commit_until(std::max(commit_, window_start));
  forget_range(old_high + 1, index);
  place(index, tag);
  fast_next_ = index + 1;
  counters_.lost.add(index - old_high - 1);
  note_last(h.frame, h.seconds);
  return index == old_high + 1 ? Decision::in_order : Decision::gap;
}

Decision Sequencer::behind(uint64_t index, uint32_t tag) noexcept {
  if (index >= commit_) {
    if (seen(index)) {
      counters_.duplicate.add();
      return Decision::duplicate;
    }
    place(index, tag);
    counters_.lost.sub();
    counters_.late_placed.add();
    return Decision::late_placed;
  }
  if (high() - index < config_.history && seen(index)) {
    counters_.duplicate.add();
    return Decision::duplicate;
  }
  counters_.late_dropped.add();
  return Decision::late_dropped;
}

// Changes neither high() nor what fast_open_ stands for: commit_until ends at the highest
// frame, which is seen, so it leaves no gap open.
void Sequencer::flush() noexcept {
  if (started_) commit_until(fast_next_);
}

void Sequencer::commit_until(uint64_t end) noexcept {
  // Indices above the old highest were never seen: account them in one step, not one by one.
  const uint64_t scan_end = std::min(end, fast_next_);
  for (; commit_ < scan_end; ++commit_) {
    if (!seen(commit_)) {
      extend_gap(commit_, 1);
      continue;
    }
    close_gap();
    sink_.deliver(Delivery{commit_, tags_[commit_ & mask_], commit_ == seg_first_});
    counters_.delivered.add();
  }
  if (end > commit_) {
    extend_gap(commit_, end - commit_);
    commit_ = end;
  }
}

void Sequencer::extend_gap(uint64_t first, uint64_t count) noexcept {
  if (gap_count_ == 0) gap_first_ = first;
  gap_count_ += count;
}

void Sequencer::close_gap() noexcept {
  if (gap_count_ == 0) return;
  const codif::Header h = codif::at_index(ref_, timing_, gap_first_);
  const GapEvent e{gap_first_, gap_count_, codif::frame_start_unix_ns(h, timing_)};
  gap_count_ = 0;
  counters_.gap_events.add();
  if (!gaps_.push(e)) counters_.gap_events_dropped.add();
}

void Sequencer::forget_range(uint64_t first, uint64_t last) noexcept {
  if (last < first) return;
  if (last == first) {  // the next frame in order: one bit
    seen_bits_[(first & mask_) / 64] &= ~(uint64_t{1} << (first % 64));
    return;
  }
  if (last - first >= config_.history) {
    std::fill_n(seen_bits_.get(), config_.history / 64, uint64_t{0});
    return;
  }
  for (uint64_t i = first; i <= last; ++i) {
    // Whole words at a time once aligned: long gaps cost history/64 steps at most.
    if (i % 64 == 0 && last - i >= 63) {
      seen_bits_[(i & mask_) / 64] = 0;
      i += 63;
      continue;
    }
    seen_bits_[(i & mask_) / 64] &= ~(uint64_t{1} << (i % 64));
  }
}

void Sequencer::segment_counts(SequencerStats& s) const noexcept {
  codif::Header h;
  codif::Timing t;
  uint64_t frame_bytes = 0, before_bytes = 0, before_received = 0, odd = 0;
  for (;;) {
    const uint64_t version = seg_version_.load(std::memory_order_acquire);
    s.received = counters_.received.get();
    odd = counters_.odd_size_bytes.get();
    const uint64_t stamp = counters_.last_stamp.get();
    h.epoch = static_cast<uint8_t>(seg_epoch_.get());
    t.period = static_cast<uint32_t>(seg_period_.get());
    t.frames_per_period = seg_frames_per_period_.get();
    frame_bytes = seg_frame_bytes_pub_.get();
    before_bytes = segment_bytes_.get();
    before_received = segment_received_.get();
    std::atomic_thread_fence(std::memory_order_acquire);
    if (version % 2 == 0 && seg_version_.load(std::memory_order_relaxed) == version) {
      h.seconds = static_cast<uint32_t>(stamp >> 32);
      h.frame = static_cast<uint32_t>(stamp);
      break;
    }
  }
  // Every frame since the segment began has its size but the odd ones, whose difference is in
  // `odd`. Read together: a frame counted is in both or in neither.
  s.bytes = before_bytes + (s.received - before_received) * frame_bytes + odd;
  if (t.frames_per_period == 0) return;        // nothing received yet
  s.last_index = codif::absolute_index(h, t);  // as on_frame computed it: same period and rate
  s.last_time_ns = codif::frame_start_unix_ns(h, t);
}

SequencerStats Sequencer::stats() const noexcept {
  const Counters& c = counters_;
  SequencerStats s;
  s.delivered = c.delivered.get();
  s.lost = c.lost.get();
  s.duplicate = c.duplicate.get();
  s.late_placed = c.late_placed.get();
  s.late_dropped = c.late_dropped.get();
  s.invalid = c.invalid.get();
  s.resync = c.resync.get();
  s.outliers = c.outliers.get();
  s.gap_events = c.gap_events.get();
  s.gap_events_dropped = c.gap_events_dropped.get();
  s.first_index = c.first_index.get();
  s.first_time_ns = static_cast<int64_t>(c.first_time_ns.get());
  segment_counts(s);
  return s;
}

}  // namespace rocecap::capture
