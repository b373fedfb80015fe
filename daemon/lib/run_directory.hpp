// The run directory before a run starts: created, locked for this process (one daemon per run
// directory), and, when an earlier attempt left it, recovered (rundir/recover.hpp) so that this
// attempt continues the run: its files take the next sequence numbers and its manifest carries
// the earlier attempts (rundir/attempts.hpp).
#pragma once

#include <spdlog/logger.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "config/run_config.hpp"
#include "rundir/run_lock.hpp"

namespace rocecap::daemon {

struct RunDirectory {
  std::filesystem::path path;
  std::unique_ptr<rundir::RunDirLock> lock;
  bool created = false;     // this start created it
  nlohmann::json previous;  // the run's manifest before this attempt; null: first attempt
  int attempt = 1;          // 1 + the attempts before
  uint64_t first_seq = 0;   // this attempt's first file sequence number
};

// Throws std::runtime_error (a start failure): the directory cannot be created, another
// process holds it (the message names its PID), or the recovery failed.
RunDirectory open_run_directory(const config::RunConfig& cfg, const std::string& version,
                                spdlog::logger& log);

// After a start failure: a run directory this start created is removed again (it holds nothing
// but the lock), so a failed start leaves nothing behind; one that existed keeps its manifest.
void abandon_run_directory(RunDirectory& rd) noexcept;

}  // namespace rocecap::daemon
