#include "config/retention_plan.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace rocecap::config {
namespace {

constexpr uint64_t kSlotAlign = 64;  // capture/stream_ring.cpp: header and payload slots

uint64_t frames_in(std::chrono::nanoseconds d, double frame_rate) {
  return static_cast<uint64_t>(std::ceil(static_cast<double>(d.count()) * frame_rate / 1e9));
}

uint64_t round_up(uint64_t n, uint64_t unit) {
  return (n + unit - 1) / unit * unit;
}

}  // namespace

uint64_t consumer_keep(const RunConfig& cfg) noexcept {
  const uint64_t k = cfg.consumers.keep != 0 ? cfg.consumers.keep : cfg.capture.ring_depth / 4;
  return std::max<uint64_t>(k, 1);
}

uint64_t consumer_hold_frames(const RunConfig& cfg) noexcept {
  const uint64_t h =
      cfg.consumers.hold_frames != 0 ? cfg.consumers.hold_frames : cfg.capture.ring_depth / 4;
  return std::max<uint64_t>(h, 1);
}

uint64_t consumer_log_frames(const RunConfig& cfg) noexcept {
  if (cfg.consumers.log_frames != 0) return cfg.consumers.log_frames;
  const uint64_t slots = plan_retention(cfg).ring_slots;
  return std::clamp<uint64_t>(std::bit_ceil(4 * slots), 1024, uint64_t{1} << 24);
}

RetentionPlan plan_retention(const RunConfig& cfg) {
  RetentionPlan p;
  const RetentionSection& r = cfg.retention;
  p.interface_bytes.assign(cfg.capture.interfaces.size(), 0);
  if (!keeps_frames(cfg)) return p;
  if (r.enabled) {
    p.keep_frames = frames_in(r.retain, r.frame_rate);
    p.pin_frames = frames_in(r.pin_headroom, r.frame_rate);
  } else {
    p.keep_frames = consumer_keep(cfg);
  }
  if (cfg.consumers.enabled) p.pin_frames += consumer_hold_frames(cfg);
  p.ring_slots = uint64_t{cfg.capture.ring_depth} + p.keep_frames + p.pin_frames;
  const uint64_t header = round_up(cfg.capture.header_split, kSlotAlign);
  const uint64_t payload = round_up(cfg.capture.max_frame - cfg.capture.header_split,
                                    cfg.output.direct_io ? 4096 : kSlotAlign);
  p.slot_bytes = header + payload;
  p.stream_bytes = (p.keep_frames + p.pin_frames) * p.slot_bytes;
  for (std::size_t i = 0; i < cfg.capture.interfaces.size(); ++i) {
    p.interface_bytes[i] =
        p.stream_bytes * cfg.capture.interfaces[i].groups.size() * cfg.streams.antennas.size();
    p.total_bytes += p.interface_bytes[i];
  }
  return p;
}

}  // namespace rocecap::config
