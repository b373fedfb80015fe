// This process's attempt at a run, before it starts: the run directory created (a symlink
// refused), locked for this process (one daemon per run directory), and, when an earlier
// attempt left it, recovered (rundir/recover.hpp) so that this
// attempt continues the run: its files take the next sequence numbers and its manifest carries
// the earlier attempts (rundir/attempts.hpp).
#pragma once

#include <spdlog/logger.h>

#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "config/run_config.hpp"
#include "rundir/run_lock.hpp"

namespace rocecap::daemon {

struct RunAttempt {
  std::filesystem::path path;
  std::unique_ptr<rundir::RunDirLock> lock;
  bool created = false;     // this start created it
  nlohmann::json previous;  // the run's manifest before this attempt; null: first attempt
  int attempt = 1;          // 1 + the attempts before
  // This attempt's first file sequence number per writer (keyed by its file 0's name): each
  // writer continues after its own files; a writer without any starts at 0 (its names are
  // free; were they not, O_EXCL refuses the file, which is counted, never overwritten).
  std::map<std::string, uint64_t> next_seq;
  uint64_t next_seq_any = 0;
  // Output targets an earlier attempt wrote to that could not be read for recovery (not
  // mounted, moved away, unmarked), by directory (run_assembly.hpp, target_key) -> why: left
  // out of rotation for this attempt and never re-created (run_assembly.hpp,
  // UnavailableTargets).
  std::map<std::string, std::string> unavailable_targets;
  uint64_t first_seq(const std::string& file0) const {
    const auto it = next_seq.find(file0);
    return it != next_seq.end() ? it->second : 0;
  }
};

// Throws std::runtime_error (a start failure): the directory cannot be created, another
// process holds it (the message names its PID), or the recovery failed.
RunAttempt begin_attempt(const config::RunConfig& cfg, const std::string& version,
                         spdlog::logger& log);

// After a start failure: a run directory this start created is removed again (it holds nothing
// but the lock), so a failed start leaves nothing behind; one that existed keeps its manifest.
void abandon_attempt(RunAttempt& rd) noexcept;

}  // namespace rocecap::daemon
