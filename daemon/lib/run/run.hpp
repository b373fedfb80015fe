// One observing run from start to stop: build everything, start the threads, wait for a stop
// (SIGINT/SIGTERM, run.duration, run.packets, end of a replayed file, or a capture error),
// drain, close and fsync every file, write the final manifest.
#pragma once

#include <spdlog/logger.h>

#include <chrono>
#include <memory>

#include "config/run_config.hpp"

namespace rocecap::daemon {

// rocecapd exit codes (also in --help and README).
inline constexpr int kExitOk = 0;             // the run ended as configured or on SIGINT/SIGTERM
inline constexpr int kExitUsage = 1;          // bad command line
inline constexpr int kExitConfig = 2;         // the run file has problems (all of them printed)
inline constexpr int kExitStartup = 3;        // could not start: interface, file, permissions
inline constexpr int kExitCaptureFailed = 4;  // a capture loop failed during the run
// The run could not be recorded as asked: the run directory was removed or replaced, an open
// file was deleted, the storage answered EIO (or EROFS, ENOENT...), or the final manifest could
// not be written. Restarting would not help (systemd: RestartPreventExitStatus).
inline constexpr int kExitStorageLost = 5;
// The run directory is locked by another process (its PID in the log): a manual run, or a
// second unit on the same run file. Not retried by systemd (a retry every RestartSec would
// only log the same refusal until the holder ends, then continue its run unasked).
inline constexpr int kExitRunInUse = 6;

struct RunOptions {
  std::shared_ptr<spdlog::logger> log;
  std::chrono::milliseconds status_interval{5000};
  std::chrono::milliseconds manifest_interval{10'000};
  // After the run has stopped, keep serving metrics this long (run_state "stopped") so the
  // final counts of a short run can still be scraped; a signal ends it early.
  std::chrono::milliseconds metrics_linger{0};
};

int run(const config::RunConfig& config, const RunOptions& options);

}  // namespace rocecap::daemon
