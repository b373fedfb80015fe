// A one-screen description of a validated run, for `rocecapd --check-config` and the log.
#pragma once

#include <cstddef>
#include <string>

#include "config/run_config.hpp"

namespace rocecap::config {

// Streams listed one per line up to this many; the rest are counted.
inline constexpr std::size_t kSummaryStreamLines = 16;

std::string render_summary(const RunConfig& config);

}  // namespace rocecap::config
