// Times as the manifest writes them: ISO 8601 UTC with milliseconds. Here, below the daemon, so
// that rocecapd's manifests and `rocecap recover`'s rebuilt ones share one format.
#pragma once

#include <cstdint>
#include <string>

namespace rocecap::rundir {

// "2026-11-23T21:49:34.123Z" for nanoseconds since the Unix epoch.
std::string iso8601_utc(int64_t unix_ns);

// CLOCK_REALTIME in nanoseconds since the Unix epoch.
int64_t unix_now_ns();

}  // namespace rocecap::rundir
