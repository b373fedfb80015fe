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

}  // namespace rocecap::config
