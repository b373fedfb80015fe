// A one-screen description of a validated run, for `rocecapd --check-config` and the log.
#pragma once

#include <cstddef>
#include <string>

#include "config/run_config.hpp"

namespace rocecap::config {

// Streams listed one per line up to this many; the rest are counted.
inline constexpr std::size_t kSummaryStreamLines = 16;

std::string render_summary(const RunConfig& config);

// metrics.listen is not a loopback address: the counters are served to the network (the
// daemon warns at start, check-config says so after the address).
constexpr bool metrics_exposed(const MetricsSection& m) noexcept {
  return m.enabled && (m.address >> 24) != 127;
}
inline constexpr const char* kExposedNote =
    "  (warning: not loopback; anyone who can reach this host can read them)";

// Triggered dumps on an exposed metrics listener without a token: anyone who can reach the
// host can start dumps (disk space, pinned rings). The daemon warns at start; check-config too.
inline bool trigger_exposed_without_token(const RunConfig& c) noexcept {
  return c.retention.enabled && metrics_exposed(c.metrics) && c.retention.http_token_file.empty();
}
inline constexpr const char* kTriggerExposedNote =
    "            (warning: POST /trigger on a non-loopback metrics.listen without "
    "retention.http_token_file: anyone who can reach this host can start dumps)\n";

}  // namespace rocecap::config
