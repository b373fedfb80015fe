// The CODIF frames `rocecap gen` sends: header fields from GenFrameParams, the antenna's thread
// id, the frame's absolute index, the deterministic payload pattern, and the impairment that
// changes the bytes (invalid bit, corrupted sync word, cut-short data).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "capture/codif/header.hpp"
#include "tools/lib/gen_plan.hpp"
#include "tools/lib/gen_summary.hpp"
#include "tools/lib/gen_vdif_frame.hpp"
#include "tools/lib/pulse.hpp"
#include "tools/lib/tone.hpp"

namespace rocecap::tools {

// Frames per period when --total-samples is not given.
inline constexpr uint64_t kDefaultFramesPerPeriod = 10000;

// Largest UDP payload an IPv4 datagram can carry.
inline constexpr std::size_t kMaxUdpPayload = 65507;

// The sample rate, exactly: `samples` samples per channel every `seconds` seconds.
struct SampleClock {
  uint64_t samples = 0;
  uint64_t seconds = 1;
};

class FrameBuilder {
 public:
  // Resolves defaults (total_samples 0 -> kDefaultFramesPerPeriod frames per period) and
  // validates; throws std::invalid_argument naming the option at fault.
  explicit FrameBuilder(const GenFrameParams& params);

  const GenFrameParams& params() const noexcept { return params_; }
  const capture::codif::Timing& timing() const noexcept { return timing_; }
  uint64_t first_index() const noexcept { return first_index_; }
  // --format vdif (params().format): frames come from here; null for CODIF.
  const VdifFrameBuilder* vdif() const noexcept { return vdif_ ? &*vdif_ : nullptr; }
  // Threads each source sends (VDIF); 1 for CODIF.
  uint32_t threads() const noexcept { return vdif_ ? vdif_->threads() : 1; }
  std::size_t frame_bytes() const noexcept {
    return vdif_ ? vdif_->frame_bytes() : capture::codif::kHeaderBytes + params_.payload_bytes;
  }
  // UDP payload of a truncated frame: the header and the first half of the data, in 8s.
  std::size_t truncated_bytes() const noexcept {
    return capture::codif::kHeaderBytes + (params_.payload_bytes / 2) / 8 * 8;
  }

  // Timing of either format: samples per channel per frame, the sample rate, and the header
  // time (seconds, frame number) and Unix start time of absolute frame `index`.
  uint64_t samples_per_frame() const noexcept {
    return vdif_ ? vdif_->timing().samples_per_frame : timing_.samples_per_frame;
  }
  SampleClock sample_clock() const noexcept;
  GenFrameTime frame_time(uint64_t index) const noexcept;
  int64_t frame_unix_ns(uint64_t index) const noexcept;

  // --pulse-at (tools/lib/pulse.hpp): from now on the frames of the streams of pulse.groups[g]
  // carry its samples (payload functions given group g). Throws std::invalid_argument when the
  // pulse does not fit these frames (a summary's pulse of another nchan or nbits).
  void set_pulse(const GenPulse& pulse);
  // Position of (group, port) in the pulse's groups; kNoPulseGroup when not there (no pulse).
  uint32_t pulse_group(const std::string& group, uint16_t port) const noexcept;

  // Data array bytes [first_offset, first_offset + out.size()) of antenna `antenna`'s frame
  // `index` (CODIF) in a stream of pulse group `group`: the payload pattern, or with --tone the
  // tone over noise from it, and the pulse's samples over either.
  void fill_payload(uint32_t group, uint32_t antenna, uint64_t index, uint64_t first_offset,
                    std::span<std::byte> out) const noexcept;
  // Offset into `data` of the first byte that differs from those, data.size() when all match.
  std::size_t first_payload_mismatch(uint32_t group, uint32_t antenna, uint64_t index,
                                     uint64_t first_offset,
                                     std::span<const std::byte> data) const noexcept;
  // The same for a stream of no pulse group.
  void fill_payload(uint32_t antenna, uint64_t index, uint64_t first_offset,
                    std::span<std::byte> out) const noexcept {
    fill_payload(kNoPulseGroup, antenna, index, first_offset, out);
  }
  std::size_t first_payload_mismatch(uint32_t antenna, uint64_t index, uint64_t first_offset,
                                     std::span<const std::byte> data) const noexcept {
    return first_payload_mismatch(kNoPulseGroup, antenna, index, first_offset, data);
  }

  // The header of absolute frame `index` of antenna `antenna`, impairment applied.
  capture::codif::Header header(uint32_t antenna, uint64_t index, Fate fate) const noexcept;

  // Writes the UDP payload of that frame of a stream of pulse group `group` into `out` (at
  // least frame_bytes()); returns its size.
  std::size_t build(uint32_t group, uint32_t antenna, uint64_t index, Fate fate,
                    std::span<std::byte> out) const noexcept;
  // The same for thread `thread` (position in the thread list; 0 for CODIF), with VTP
  // sequence number `psn` when the VDIF frames carry one.
  std::size_t build(uint32_t group, uint32_t antenna, uint32_t thread, uint64_t index, uint64_t psn,
                    Fate fate, std::span<std::byte> out) const noexcept {
    if (vdif_) return vdif_->build(group, antenna, thread, index, psn, fate, out);
    return build(group, antenna, index, fate, out);
  }
  // A stream of no pulse group.
  std::size_t build(uint32_t antenna, uint64_t index, Fate fate,
                    std::span<std::byte> out) const noexcept {
    return build(kNoPulseGroup, antenna, index, fate, out);
  }
  std::size_t build(uint32_t antenna, uint32_t thread, uint64_t index, uint64_t psn, Fate fate,
                    std::span<std::byte> out) const noexcept {
    return build(kNoPulseGroup, antenna, thread, index, psn, fate, out);
  }

 private:
  GenFrameParams params_;
  capture::codif::Header base_;
  capture::codif::Timing timing_;
  uint64_t first_index_ = 0;
  Tone tone_;
  Pulse pulse_;
  std::vector<std::pair<std::string, uint16_t>> pulse_groups_;  // (group, port)
  std::optional<VdifFrameBuilder> vdif_;
};

}  // namespace rocecap::tools
