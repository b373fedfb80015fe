// What a run tells people: the manifest snapshot, the periodic status line and the final
// summary, all built from counters that are safe to read where they are read.
#pragma once

#include <spdlog/logger.h>

#include <string>
#include <vector>

#include "daemon/lib/reporting/manifest.hpp"
#include "daemon/lib/run/run_assembly.hpp"

namespace rocecap::daemon {

struct RunIdentity {
  std::string started;  // ISO 8601
  std::string host;
  std::string version;
};

// Writer-side state (files, gaps, write errors) is read here: call it on the writer thread
// or after the writer thread has ended. Not const: open files' sizes are refreshed.
Manifest snapshot(Runtime& rt, const RunIdentity& id, const std::string& state);

// Rates are per second over `seconds` since the previous call's totals (kept in `last`).
struct StatusTotals {
  uint64_t packets = 0, bytes = 0;
  std::vector<uint64_t> stream_packets;  // per stream, in interface then stream order
};
// One line for the run, then one per stream (info up to kStatusStreamsAtInfo streams, else
// debug, so a 100-antenna run does not flood the journal).
inline constexpr std::size_t kStatusStreamsAtInfo = 16;
void log_status(const Runtime& rt, spdlog::logger& log, double seconds, StatusTotals& last);
// Source events the capture threads recorded but may not log themselves (the first completion
// error of a verbs interface): each logged once. Main thread.
void log_source_events(const Runtime& rt, spdlog::logger& log);
void log_final_summary(const Runtime& rt, spdlog::logger& log);

using rundir::unix_now_ns;

}  // namespace rocecap::daemon
