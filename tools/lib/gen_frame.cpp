#include "tools/lib/gen_frame.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>

#include "tools/lib/payload_pattern.hpp"

namespace rocecap::tools {
namespace {

[[noreturn]] void bad(const std::string& what) {
  throw std::invalid_argument(what);
}

capture::codif::Header base_header(const GenFrameParams& p) {
  capture::codif::Header h;
  if (p.layout == "v3") {
    h.layout = capture::codif::Layout::v3;
    h.sync = capture::codif::kSyncV3;
    h.version = 3;
  } else if (p.layout == "v1") {
    h.layout = capture::codif::Layout::v1;
    h.sync = capture::codif::kSyncV1;
    h.version = 1;
  } else {
    bad("--layout: must be v3 or v1, not '" + p.layout + "'");
  }
  if (p.station.size() != 2)
    bad("--station: must be two ASCII characters, not '" + p.station + "'");
  h.station_id = capture::codif::station_id(p.station[0], p.station[1]);
  h.epoch = p.epoch;
  h.nbits = p.nbits;
  h.complex = p.complex;
  h.period = p.period;
  h.thread_id = p.thread_id;
  h.group_id = p.group_id;
  h.nchan = p.nchan;
  h.data_words = p.payload_bytes / 8;
  h.total_samples = p.total_samples;
  h.seconds = p.start_seconds;
  h.frame = p.start_frame;
  return h;
}

void check_ranges(const GenFrameParams& p) {
  if (p.payload_bytes == 0 || p.payload_bytes % 8 != 0) {
    bad("--payload-bytes: must be a positive multiple of 8, not " +
        std::to_string(p.payload_bytes));
  }
  if (capture::codif::kHeaderBytes + p.payload_bytes > kMaxUdpPayload) {
    bad("--payload-bytes: 64 + " + std::to_string(p.payload_bytes) +
        " exceeds the largest UDP payload (" + std::to_string(kMaxUdpPayload) + ")");
  }
  if (p.nbits == 0) bad("--nbits: must be at least 1");
  if (p.layout == "v1" && p.nbits > 31) bad("--nbits: the v1 layout holds at most 31");
  if (p.nchan == 0) bad("--nchan: must be at least 1");
  if (p.period == 0) bad("--period: must be at least 1 second");
  if (p.start_seconds % p.period != 0) {
    bad("--start-seconds: " + std::to_string(p.start_seconds) + " is not a multiple of --period " +
        std::to_string(p.period));
  }
  if (p.layout == "v1" && p.epoch > 63) bad("--epoch: the v1 layout holds at most 63");
}

// Offset of the first byte of `data` that differs from what fill(offset, want) writes for bytes
// [offset, offset + want.size()) of it, data.size() when all match; 256 bytes at a time.
template <typename Fill>
std::size_t first_mismatch_of(std::span<const std::byte> data, Fill fill) noexcept {
  std::array<std::byte, 256> want{};
  for (std::size_t done = 0; done < data.size(); done += want.size()) {
    const std::size_t n = std::min(want.size(), data.size() - done);
    fill(done, std::span(want).first(n));
    for (std::size_t j = 0; j < n; ++j) {
      if (want[j] != data[done + j]) return done + j;
    }
  }
  return data.size();
}

}  // namespace

FrameBuilder::FrameBuilder(const GenFrameParams& params) : params_(params) {
  if (params_.format == "vdif") {
    vdif_.emplace(params_);
    first_index_ = vdif_->first_index();
    return;
  }
  if (params_.format != "codif")
    bad("--format: must be codif or vdif, not '" + params_.format + "'");
  check_ranges(params_);
  const uint64_t sample_bits = uint64_t{params_.nchan} * params_.nbits * (params_.complex ? 2 : 1);
  const uint64_t payload_bits = uint64_t{params_.payload_bytes} * 8;
  if (payload_bits % sample_bits != 0) {
    bad("--payload-bytes " + std::to_string(params_.payload_bytes) +
        " does not hold a whole number of samples of --nchan " + std::to_string(params_.nchan) +
        " x --nbits " + std::to_string(params_.nbits) + (params_.complex ? " x 2 (complex)" : ""));
  }
  if (params_.total_samples == 0) {
    params_.total_samples = kDefaultFramesPerPeriod * (payload_bits / sample_bits);
  }
  base_ = base_header(params_);
  const capture::codif::Invalid why = capture::codif::validate(base_, frame_bytes(), timing_);
  if (why == capture::codif::Invalid::fractional_frames) {
    bad("--total-samples " + std::to_string(params_.total_samples) +
        " is not a whole number of frames of " + std::to_string(payload_bits / sample_bits) +
        " samples");
  }
  if (why == capture::codif::Invalid::frame_out_of_range) {
    bad("--start-frame " + std::to_string(params_.start_frame) + " is not below the " +
        std::to_string(params_.total_samples / (payload_bits / sample_bits)) +
        " frames of a period");
  }
  if (why != capture::codif::Invalid::ok) {
    bad("frame parameters rejected by CODIF validation: " +
        std::string(capture::codif::to_string(why)));
  }
  first_index_ = capture::codif::absolute_index(base_, timing_);
  check_tone(params_);
  tone_ = Tone(ToneLayout{params_.tone, params_.tone_channel, params_.nchan, params_.complex, false,
                          timing_.samples_per_frame});
}

SampleClock FrameBuilder::sample_clock() const noexcept {
  if (vdif_) return {vdif_->timing().frames_per_second * vdif_->timing().samples_per_frame, 1};
  return {timing_.frames_per_period * timing_.samples_per_frame, timing_.period};
}

GenFrameTime FrameBuilder::frame_time(uint64_t index) const noexcept {
  if (vdif_) {
    const capture::vdif::Header h = vdif_->header(0, index, Fate::plain);
    return {h.seconds, h.frame};
  }
  const capture::codif::Header h = capture::codif::at_index(base_, timing_, index);
  return {h.seconds, h.frame};
}

int64_t FrameBuilder::frame_unix_ns(uint64_t index) const noexcept {
  if (vdif_) {
    return capture::vdif::frame_start_unix_ns(vdif_->header(0, index, Fate::plain),
                                              vdif_->timing());
  }
  return capture::codif::frame_start_unix_ns(capture::codif::at_index(base_, timing_, index),
                                             timing_);
}

void FrameBuilder::set_pulse(const GenPulse& pulse) {
  if (!pulse_nbits_supported(params_.nbits)) bad("--pulse-at: needs --nbits 2, 4 or 8");
  PulseLayout layout{params_.nchan,
                     params_.nbits,
                     params_.complex,
                     vdif_.has_value(),
                     samples_per_frame(),
                     first_index_,
                     {}};
  pulse_groups_.clear();
  for (const GenPulseGroup& g : pulse.groups) {
    if (g.first_sample.size() != params_.nchan || g.end_sample.size() != params_.nchan) {
      bad("pulse group " + g.group + ":" + std::to_string(g.port) + ": " +
          std::to_string(g.first_sample.size()) + " channel spans for --nchan " +
          std::to_string(params_.nchan));
    }
    std::vector<PulseSpan> spans;
    for (std::size_t c = 0; c < g.first_sample.size(); ++c)
      spans.push_back({g.first_sample[c], g.end_sample[c]});
    layout.groups.push_back(std::move(spans));
    pulse_groups_.emplace_back(g.group, g.port);
  }
  if (vdif_) {
    vdif_->set_pulse(Pulse(std::move(layout)));
  } else {
    pulse_ = Pulse(std::move(layout));
  }
}

uint32_t FrameBuilder::pulse_group(const std::string& group, uint16_t port) const noexcept {
  for (std::size_t g = 0; g < pulse_groups_.size(); ++g) {
    if (pulse_groups_[g].first == group && pulse_groups_[g].second == port)
      return static_cast<uint32_t>(g);
  }
  return kNoPulseGroup;
}

void FrameBuilder::fill_payload(uint32_t group, uint32_t antenna, uint64_t index,
                                uint64_t first_offset, std::span<std::byte> out) const noexcept {
  if (tone_.enabled()) {
    tone_.fill(antenna, index, first_offset, out);
  } else {
    fill_pattern(antenna, index, first_offset, out);
  }
  pulse_.overlay(group, antenna, index, first_offset, out);
}

std::size_t FrameBuilder::first_payload_mismatch(uint32_t group, uint32_t antenna, uint64_t index,
                                                 uint64_t first_offset,
                                                 std::span<const std::byte> data) const noexcept {
  if (pulse_.touches(group, index)) {
    return first_mismatch_of(data, [&](uint64_t offset, std::span<std::byte> want) {
      fill_payload(group, antenna, index, first_offset + offset, want);
    });
  }
  if (tone_.enabled()) return tone_.first_mismatch(antenna, index, first_offset, data);
  return first_pattern_mismatch(antenna, index, first_offset, data);
}

capture::codif::Header FrameBuilder::header(uint32_t antenna, uint64_t index,
                                            Fate fate) const noexcept {
  capture::codif::Header h = capture::codif::at_index(base_, timing_, index);
  h.thread_id = static_cast<uint16_t>(params_.thread_id + antenna);
  if (fate == Fate::invalid) h.invalid = true;
  if (fate == Fate::bad_sync) h.sync = ~h.sync;  // matches none of the accepted sync words
  return h;
}

std::size_t FrameBuilder::build(uint32_t group, uint32_t antenna, uint64_t index, Fate fate,
                                std::span<std::byte> out) const noexcept {
  const std::size_t size = fate == Fate::truncated ? truncated_bytes() : frame_bytes();
  capture::codif::encode(header(antenna, index, fate), out.first<capture::codif::kHeaderBytes>());
  fill_payload(group, antenna, index, 0,
               out.subspan(capture::codif::kHeaderBytes, size - capture::codif::kHeaderBytes));
  return size;
}

}  // namespace rocecap::tools
