#include "capture/verbs/nic_clock.hpp"

#include <cstdio>

namespace rocecap::capture::verbs {

const char* encoding_name(WallclockEncoding e) noexcept {
  switch (e) {
    case WallclockEncoding::ns:
      return "ns";
    case WallclockEncoding::realtime:
      return "seconds<<32|ns";
    case WallclockEncoding::unknown:
      break;
  }
  return "unknown";
}

WallclockEncoding detect_encoding(uint64_t v, int64_t host_ns) noexcept {
  const auto distance = [host_ns](uint64_t ns) {
    return std::fabs(static_cast<double>(ns) - static_cast<double>(host_ns));
  };
  const bool rt_valid = (v & 0xffffffffu) < 1'000'000'000u;
  if (rt_valid && distance(decode_wallclock(v, WallclockEncoding::realtime)) < distance(v)) {
    return WallclockEncoding::realtime;
  }
  return WallclockEncoding::ns;
}

namespace {

OffsetClass classify_with(double offset_s, double tolerance) noexcept {
  const double whole = std::nearbyint(offset_s);
  if (std::fabs(offset_s - whole) > tolerance) return {};
  const auto n = static_cast<long>(whole);
  if (n == 0) return {OffsetClass::utc, 0};
  if (n >= kMinLeapSeconds && n <= kMaxLeapSeconds) return {OffsetClass::tai, n};
  return {};
}

}  // namespace

OffsetClass classify_offset(double offset_s, const OffsetClass* previous) noexcept {
  const OffsetClass now = classify_with(offset_s, kWholeSecondTolerance);
  if (previous != nullptr && previous->kind != OffsetClass::other && !(now == *previous) &&
      classify_with(offset_s, 2 * kWholeSecondTolerance) == *previous) {
    return *previous;
  }
  return now;
}

std::string describe_offset(double offset_s, const OffsetClass& c) {
  char buf[320];
  switch (c.kind) {
    case OffsetClass::tai:
      std::snprintf(buf, sizeof buf,
                    "the NIC clock looks like TAI: %.6f s ahead of CLOCK_REALTIME, %ld whole leap "
                    "seconds%s (a PHC disciplined by ptp4l keeps TAI); timestamps are corrected "
                    "to UTC",
                    offset_s, c.seconds,
                    c.seconds == kTaiMinusUtc ? " (TAI - UTC since 2017-01-01)"
                                              : ", not today's 37: check the grandmaster's UTC "
                                                "offset");
      return buf;
    case OffsetClass::utc:
      std::snprintf(buf, sizeof buf, "the NIC clock agrees with CLOCK_REALTIME (offset %.6f s)",
                    offset_s);
      return buf;
    case OffsetClass::other:
      break;
  }
  std::snprintf(buf, sizeof buf,
                "the NIC clock is %.6f s ahead of CLOCK_REALTIME, not a whole number of seconds "
                "(a free-running or undisciplined PHC); timestamps are corrected by the measured "
                "offset",
                offset_s);
  return buf;
}

}  // namespace rocecap::capture::verbs
