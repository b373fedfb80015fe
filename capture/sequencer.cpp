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

Verdict Sequencer::on_frame(const codif::Header& h, const codif::Timing& t, uint32_t tag) noexcept {
  counters_.received.add();
  counters_.bytes.add(h.frame_bytes());
  if (h.invalid) counters_.invalid.add();
  const uint64_t index = codif::absolute_index(h, t);
  if (!started_) {
    start_segment(h, t, index, tag);
    return {Decision::first, ResyncReason::none, index};
  }
  ResyncReason reason = changed(signature(h, t));
  if (reason == ResyncReason::none && index > high_ && index - high_ > config_.resync_frames)
    reason = ResyncReason::jump_forward;
  if (reason == ResyncReason::none && index < high_ && high_ - index > config_.resync_frames)
    reason = ResyncReason::jump_backward;
  if (reason != ResyncReason::none) {
    flush();
    counters_.resync.add();
    start_segment(h, t, index, tag);
    return {Decision::resync, reason, index};
  }
  if (index > high_) return {advance(h, t, index, tag), ResyncReason::none, index};
  return {behind(index, tag), ResyncReason::none, index};
}

void Sequencer::start_segment(const codif::Header& h, const codif::Timing& t, uint64_t index,
                              uint32_t tag) noexcept {
  const int64_t time = codif::frame_start_unix_ns(h, t);
  if (!started_) {
    counters_.first_index.set(index);
    counters_.first_time_ns.set(static_cast<uint64_t>(time));
  }
  started_ = true;
  sig_ = signature(h, t);
  ref_ = h;
  timing_ = t;
  seg_first_ = high_ = commit_ = index;
  gap_count_ = 0;
  std::fill_n(seen_bits_.get(), config_.history / 64, uint64_t{0});
  place(index, tag);
  counters_.last_index.set(index);
  counters_.last_time_ns.set(static_cast<uint64_t>(time));
}

Decision Sequencer::advance(const codif::Header& h, const codif::Timing& t, uint64_t index,
                            uint32_t tag) noexcept {
  const uint64_t old_high = high_;
  const uint64_t window_start =
      index + 1 > config_.reorder_window ? index + 1 - config_.reorder_window : 0;
  // Commit before forgetting: the bits about to be cleared alias the oldest pending indices.
  commit_until(std::max(commit_, window_start));
  forget_range(old_high + 1, index);
  place(index, tag);
  high_ = index;
  counters_.lost.add(index - old_high - 1);
  counters_.last_index.set(index);
  counters_.last_time_ns.set(static_cast<uint64_t>(codif::frame_start_unix_ns(h, t)));
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
  if (high_ - index < config_.history && seen(index)) {
    counters_.duplicate.add();
    return Decision::duplicate;
  }
  counters_.late_dropped.add();
  return Decision::late_dropped;
}

void Sequencer::flush() noexcept {
  if (started_) commit_until(high_ + 1);
}

void Sequencer::commit_until(uint64_t end) noexcept {
  // Indices above the old highest were never seen: account them in one step, not one by one.
  const uint64_t scan_end = std::min(end, high_ + 1);
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

void Sequencer::place(uint64_t index, uint32_t tag) noexcept {
  seen_bits_[(index & mask_) / 64] |= uint64_t{1} << (index % 64);
  tags_[index & mask_] = tag;
}

bool Sequencer::seen(uint64_t index) const noexcept {
  return (seen_bits_[(index & mask_) / 64] >> (index % 64)) & 1u;
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

SequencerStats Sequencer::stats() const noexcept {
  const Counters& c = counters_;
  SequencerStats s;
  s.received = c.received.get();
  s.bytes = c.bytes.get();
  s.delivered = c.delivered.get();
  s.lost = c.lost.get();
  s.duplicate = c.duplicate.get();
  s.late_placed = c.late_placed.get();
  s.late_dropped = c.late_dropped.get();
  s.invalid = c.invalid.get();
  s.resync = c.resync.get();
  s.gap_events = c.gap_events.get();
  s.gap_events_dropped = c.gap_events_dropped.get();
  s.first_index = c.first_index.get();
  s.last_index = c.last_index.get();
  s.first_time_ns = static_cast<int64_t>(c.first_time_ns.get());
  s.last_time_ns = static_cast<int64_t>(c.last_time_ns.get());
  return s;
}

}  // namespace rocecap::capture
