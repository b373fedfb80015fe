// The VDIF frames `rocecap gen --format vdif` sends (doc/vdif.md): header fields from
// GenFrameParams, one thread id per listed thread, the frame's absolute index (seconds x frames
// per second + frame number), an optional VTP sequence number in front, the deterministic
// payload pattern, and the impairments that change bytes: invalid bit, a lying length field
// (VDIF has no sync word; this is what "bad_sync" does to a VDIF frame), cut-short data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "capture/vdif/header.hpp"
#include "tools/lib/gen_plan.hpp"
#include "tools/lib/gen_summary.hpp"
#include "tools/lib/pulse.hpp"
#include "tools/lib/tone.hpp"

namespace rocecap::tools {

class VdifFrameBuilder {
 public:
  // Validates; throws std::invalid_argument naming the option at fault.
  explicit VdifFrameBuilder(const GenFrameParams& params);

  uint64_t first_index() const noexcept { return first_index_; }
  const capture::vdif::Timing& timing() const noexcept { return timing_; }
  uint32_t threads() const noexcept { return static_cast<uint32_t>(threads_.size()); }
  uint16_t thread_id(uint32_t thread) const noexcept { return threads_[thread]; }
  std::size_t frame_bytes() const noexcept { return vtp_bytes_ + base_.frame_bytes(); }
  std::size_t vtp_bytes() const noexcept { return vtp_bytes_; }
  // Position of thread id `id` in the thread list, or threads() when it is not there.
  uint32_t thread_position(uint16_t id) const noexcept {
    uint32_t k = 0;
    while (k < threads_.size() && threads_[k] != id)
      ++k;
    return k;
  }
  std::size_t truncated_bytes() const noexcept {
    return vtp_bytes_ + base_.header_bytes() + (base_.payload_bytes() / 2) / 8 * 8;
  }

  // The header of absolute frame `index` of thread `thread` (position in the list).
  capture::vdif::Header header(uint32_t thread, uint64_t index, Fate fate) const noexcept;

  // --pulse-at: the pulse every thread of every antenna of a pulse group carries.
  void set_pulse(Pulse pulse) { pulse_ = std::move(pulse); }

  // Writes the UDP payload (VTP number `psn` first with vtp) of a stream of pulse group `group`
  // (kNoPulseGroup: none) into `out`; returns its size.
  std::size_t build(uint32_t group, uint32_t antenna, uint32_t thread, uint64_t index, uint64_t psn,
                    Fate fate, std::span<std::byte> out) const noexcept;

 private:
  capture::vdif::Header base_;
  capture::vdif::Timing timing_;
  std::vector<uint16_t> threads_;
  std::size_t vtp_bytes_ = 0;
  uint64_t first_index_ = 0;
  Tone tone_;
  Pulse pulse_;
};

}  // namespace rocecap::tools
