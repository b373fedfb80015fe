// The CODIF frames `rocecap gen` sends: header fields from GenFrameParams, the antenna's thread
// id, the frame's absolute index, the deterministic payload pattern, and the impairment that
// changes the bytes (invalid bit, corrupted sync word, cut-short data).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "capture/codif/header.hpp"
#include "tools/lib/gen_plan.hpp"
#include "tools/lib/gen_summary.hpp"
#include "tools/lib/gen_vdif_frame.hpp"
#include "tools/lib/tone.hpp"

namespace rocecap::tools {

// Frames per period when --total-samples is not given.
inline constexpr uint64_t kDefaultFramesPerPeriod = 10000;

// Largest UDP payload an IPv4 datagram can carry.
inline constexpr std::size_t kMaxUdpPayload = 65507;

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

  // Data array bytes [first_offset, first_offset + out.size()) of antenna `antenna`'s frame
  // `index` (CODIF): the payload pattern, or with --tone the tone over noise from it.
  void fill_payload(uint32_t antenna, uint64_t index, uint64_t first_offset,
                    std::span<std::byte> out) const noexcept;
  // Offset into `data` of the first byte that differs from those, data.size() when all match.
  std::size_t first_payload_mismatch(uint32_t antenna, uint64_t index, uint64_t first_offset,
                                     std::span<const std::byte> data) const noexcept;

  // The header of absolute frame `index` of antenna `antenna`, impairment applied.
  capture::codif::Header header(uint32_t antenna, uint64_t index, Fate fate) const noexcept;

  // Writes the UDP payload of that frame into `out` (at least frame_bytes()); returns its size.
  std::size_t build(uint32_t antenna, uint64_t index, Fate fate,
                    std::span<std::byte> out) const noexcept;
  // The same for thread `thread` (position in the thread list; 0 for CODIF), with VTP
  // sequence number `psn` when the VDIF frames carry one.
  std::size_t build(uint32_t antenna, uint32_t thread, uint64_t index, uint64_t psn, Fate fate,
                    std::span<std::byte> out) const noexcept {
    if (vdif_) return vdif_->build(antenna, thread, index, psn, fate, out);
    return build(antenna, index, fate, out);
  }

 private:
  GenFrameParams params_;
  capture::codif::Header base_;
  capture::codif::Timing timing_;
  uint64_t first_index_ = 0;
  Tone tone_;
  std::optional<VdifFrameBuilder> vdif_;
};

}  // namespace rocecap::tools
