#include "daemon/lib/dumps/dispersion.hpp"

#include <cmath>
#include <limits>

namespace rocecap::daemon {

long double dispersion_delay_s(double dm, double f_mhz, double ref_mhz) noexcept {
  const long double f = static_cast<long double>(f_mhz) / 1000.0L;
  const long double ref = static_cast<long double>(ref_mhz) / 1000.0L;
  return static_cast<long double>(kDispersionMs) / 1000.0L * dm *
         (1.0L / (f * f) - 1.0L / (ref * ref));
}

std::optional<SweptWindow> sweep_window(int64_t start_ns, int64_t end_ns, double dm, double ref_mhz,
                                        const config::FrequencyRange& band) noexcept {
  SweptWindow w;
  w.start_delay_s = dispersion_delay_s(dm, band.high_mhz, ref_mhz);
  w.end_delay_s = dispersion_delay_s(dm, band.low_mhz, ref_mhz);
  // long double holds int64 ns exactly (64-bit mantissa on x86-64), so the sums are exact
  // before the range check.
  const long double start = start_ns + std::floor(w.start_delay_s * 1e9L);
  const long double end = end_ns + std::ceil(w.end_delay_s * 1e9L);
  constexpr long double kLow = static_cast<long double>(std::numeric_limits<int64_t>::min());
  constexpr long double kHigh = static_cast<long double>(std::numeric_limits<int64_t>::max());
  if (!(start >= kLow && end < kHigh && start < kHigh && end >= kLow)) return std::nullopt;
  w.start_ns = static_cast<int64_t>(start);
  w.end_ns = static_cast<int64_t>(end);
  return w;
}

}  // namespace rocecap::daemon
