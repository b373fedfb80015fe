// What retention (the `retention` section, doc/dumps.md) costs in ring memory: frames kept per
// stream from the configured duration and frame rate, the pin headroom, the resulting ring
// depth, and the bytes per stream, per interface and in total. One computation for
// --check-config (which refuses a plan that does not fit), the summary and the daemon (which
// sizes its rings from it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/run_config.hpp"

namespace rocecap::config {

struct RetentionPlan {
  uint64_t keep_frames = 0;   // ceil(retain x frame_rate): frames kept per stream
  uint64_t pin_frames = 0;    // ceil(pin_headroom x frame_rate): extra slots for pinned dumps
  uint64_t ring_slots = 0;    // capture.ring_depth + keep_frames + pin_frames
  uint64_t slot_bytes = 0;    // ring memory of one slot (header + payload, 64-byte aligned)
  uint64_t stream_bytes = 0;  // (keep_frames + pin_frames) x slot_bytes
  std::vector<uint64_t> interface_bytes;  // per capture.interfaces entry
  uint64_t total_bytes = 0;
};

// Empty plan (all zero) when neither retention nor consumers are on. Consumers
// (doc/consumers.md) add their own: without a retention section each stream keeps
// consumers.keep frames for them (keep_frames), and hold-mode pins need consumers.hold_frames
// slots more (pin_frames).
RetentionPlan plan_retention(const RunConfig& config);

// Whether streams keep frames after writing them (a Retention per stream): for dumps or
// consumers.
inline bool keeps_frames(const RunConfig& c) noexcept {
  return c.retention.enabled || c.consumers.enabled;
}
// consumers.keep, hold_frames and log_frames with their defaults applied.
uint64_t consumer_keep(const RunConfig& config) noexcept;
uint64_t consumer_hold_frames(const RunConfig& config) noexcept;
uint64_t consumer_log_frames(const RunConfig& config) noexcept;

// The most slots one ring can have (capture::StreamRing::kMaxSlots).
inline constexpr uint64_t kMaxRetentionRingSlots = uint64_t{1} << 24;

}  // namespace rocecap::config
