// Frame index <-> Unix ns for one stream, from one of its frames (doc/codif.md: frame i of a
// stream starts at epoch + (i / frames_per_period) periods + (i % frames_per_period) frame
// durations). VDIF streams use it through capture/vdif/timeline.hpp's CODIF view (a period of
// one second). Shared by triggered dumps (retained frames) and `rocecap extract` (recorded ones),
// so that both name the same frames for the same window.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <string>

#include "capture/codif/header.hpp"
#include "daemon/lib/dumps/trigger_request.hpp"

namespace rocecap::daemon {

struct StreamClock {
  __extension__ using i128 = __int128;
  capture::codif::Header h;
  capture::codif::Timing t;

  i128 epoch_ns() const {
    return i128{capture::codif::epoch_unix_seconds(h.epoch)} * 1'000'000'000;
  }
  i128 period_ns() const { return i128{t.period} * 1'000'000'000; }
  int64_t time_of(uint64_t i) const {
    const i128 fpp = t.frames_per_period;
    return static_cast<int64_t>(epoch_ns() + i128(i / t.frames_per_period) * period_ns() +
                                i128(i % t.frames_per_period) * period_ns() / fpp);
  }
  // The frame whose span holds `ns` (0 before the epoch).
  uint64_t index_at(int64_t ns) const {
    const i128 rel = i128{ns} - epoch_ns();
    if (rel <= 0) return 0;
    return static_cast<uint64_t>(rel * t.frames_per_period / period_ns());
  }
  // A request time in Unix ns (a CODIF time {epoch, seconds, frame} converted with this
  // stream's frame rate); what is wrong with it (refused bad_window), or empty.
  std::string unix_ns(const TriggerTime& tt, const char* key, int64_t& out) const {
    if (!tt.codif) {
      out = tt.unix_ns;
      return {};
    }
    if (tt.frame >= t.frames_per_period) {
      return fmt::format("'{}': frame {} is not below the stream's {} frames per period", key,
                         tt.frame, t.frames_per_period);
    }
    const i128 base =
        (i128{capture::codif::epoch_unix_seconds(static_cast<uint8_t>(tt.epoch))} + tt.seconds) *
        1'000'000'000;
    const i128 ns = base + i128(tt.frame) * period_ns() / t.frames_per_period;
    if (ns > std::numeric_limits<int64_t>::max()) {
      return fmt::format(
          "'{}': CODIF epoch {} + {} s + frame {} is beyond what Unix "
          "nanoseconds hold: no frame number can name it",
          key, tt.epoch, tt.seconds, tt.frame);
    }
    out = static_cast<int64_t>(ns);
    return {};
  }
};

}  // namespace rocecap::daemon
