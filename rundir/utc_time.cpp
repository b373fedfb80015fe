#include "rundir/utc_time.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace rocecap::rundir {

std::string iso8601_utc(int64_t unix_ns) {
  const time_t secs = static_cast<time_t>(unix_ns / 1'000'000'000);
  tm utc{};
  gmtime_r(&secs, &utc);
  char buf[48];
  const std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(buf + n, sizeof buf - n, ".%03dZ",
                static_cast<int>((unix_ns % 1'000'000'000) / 1'000'000));
  return buf;
}

int64_t unix_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace rocecap::rundir
