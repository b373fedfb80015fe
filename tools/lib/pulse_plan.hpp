// Where a `rocecap gen --pulse-at` pulse lies: the options checked, each group's band split over
// its channels, and per channel the run samples the pulse covers (tools/lib/pulse.hpp writes
// them). The summary's "pulse" object (gen_summary.hpp) is the result.
//
// Dispersion delay relative to the reference frequency (f in GHz, DM in pc cm^-3):
//   d(f) = 4.148808 ms x DM x (f^-2 - f_ref^-2)
// Channel c of a group LOW:HIGH (upper sideband) spans [LOW + c bw/nchan, LOW + (c+1) bw/nchan),
// bw = HIGH - LOW. Its pulse covers the samples whose time t after the start of the run's first
// frame satisfies at + d(channel top) <= t < at + width + d(channel bottom); sample n starts at
// n x (sample duration), so with x(T) = T x samples per second:
//   first = ceil(x(at + d(top))),  end = ceil(x(at + width + d(bottom)))   (end exclusive)
// computed once in doubles, where an x within 1e-6 of an integer counts as that integer (a time
// on a sample boundary starts at that sample whatever the rounding of its decimal digits), and
// clamped to 0 (nothing before the run's first sample).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tools/lib/gen_frame.hpp"
#include "tools/lib/gen_summary.hpp"

namespace rocecap::tools {

inline constexpr double kDispersionSecondsPerDm = 4.148808e-3;  // x DM x GHz^-2

// The options as given (nullopt / empty: not given).
struct PulseRequest {
  std::optional<double> at, width, dm, ref_mhz;
  std::string frequencies;  // --frequencies LOW:HIGH,LOW:HIGH,...
};

struct PulseGroupAddress {
  std::string group;  // dotted quad
  uint16_t port = 0;
};

// --frequencies: one LOW:HIGH pair in MHz per group, 0 < LOW < HIGH; throws
// std::invalid_argument naming the option and the item at fault.
std::vector<std::pair<double, double>> parse_frequencies(const std::string& list,
                                                         std::size_t groups);

// Seconds the pulse arrives later at f_mhz than at ref_mhz (negative above it).
double dispersion_delay(double dm, double f_mhz, double ref_mhz) noexcept;

// First sample at or after `seconds` after the run's start, with the rounding described above.
int64_t sample_at(double seconds, const SampleClock& clock) noexcept;

// The pulse of a run, or nullopt without --pulse-at. Throws std::invalid_argument naming the
// option for a bad or missing one (a pulse option without --pulse-at, --pulse-at without
// --frequencies, samples of other than 2, 4 or 8 bits).
std::optional<GenPulse> plan_pulse(const PulseRequest& request,
                                   const std::vector<PulseGroupAddress>& groups,
                                   const FrameBuilder& frames);

}  // namespace rocecap::tools
