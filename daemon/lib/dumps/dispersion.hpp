// Dispersion-aware dump windows (doc/dumps.md, "Dispersed events"). A pulse that crosses the
// reference frequency at time t reaches frequency f at t + delay(f), with
//
//   delay(f) = 4.148808 ms x DM x ((f / GHz)^-2 - (ref / GHz)^-2)      (DM in pc cm^-3)
//
// (the cold-plasma dispersion constant, e.g. Lorimer & Kramer, Handbook of Pulsar Astronomy,
// eq. 4.7; the value kotekan and psrdada_cpp use). A stream spans [low, high] (all its frame's
// channels), so the window [start, end) at the reference frequency becomes
// [start + delay(high), end + delay(low)) for it: every dispersed sample of the event in any of
// its channels is inside. The shifted start is rounded down to the nanosecond and the shifted end
// up, so rounding never cuts a sample.
#pragma once

#include <cstdint>
#include <optional>

#include "config/run_config.hpp"

namespace rocecap::daemon {

inline constexpr double kDispersionMs = 4.148808;  // ms GHz^2 pc^-1 cm^3

// delay(f) in seconds (negative for f above ref), long double for the ns rounding below.
long double dispersion_delay_s(double dm, double f_mhz, double ref_mhz) noexcept;

struct SweptWindow {
  int64_t start_ns = 0, end_ns = 0;                // the stream's window
  long double start_delay_s = 0, end_delay_s = 0;  // delay(high), delay(low)
};

// [start, end) at ref_mhz, as stream `band` must cut it for `dm`; nullopt when a shifted time
// is outside what int64 Unix nanoseconds hold.
std::optional<SweptWindow> sweep_window(int64_t start_ns, int64_t end_ns, double dm, double ref_mhz,
                                        const config::FrequencyRange& band) noexcept;

}  // namespace rocecap::daemon
