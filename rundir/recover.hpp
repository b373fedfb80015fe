// Recovery of a run directory that a killed rocecapd left behind (SIGKILL, OOM, power cut):
// its manifest is the last periodic snapshot (state "running"), files opened since are not
// listed, listed sizes are older than the files, and the last frame or record of each open file
// is cut short. recover_run finds every file the run's name templates can have produced
// (sequence numbers upward from 0) on every output target of the run (a file's name is the
// same relative to each target; a target whose run directory cannot be read, or lacks the
// rocecap-target.json marker naming this run and this target, is never touched: its listed
// files are kept as they were and it is named in the result), cuts each to its last whole record
// (file_scan.hpp), removes files left without one, and rewrites manifest.json from the files: state
// "recovered", every file with its true size and record count, and a "recovery" section saying what
// was cut, what was added, what was recomputed and what could not be. `rocecap recover` and
// rocecapd (before it continues a run) call the same function. The caller holds the run directory's
// lock.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/run_config.hpp"

namespace rocecap::rundir {

inline constexpr const char* kManifestName = "manifest.json";
// In the run directory of every output target but the first (output.directories): which run,
// which target, all targets, where the manifest is (written by rocecapd,
// daemon/lib/run/run_assembly).
inline constexpr const char* kTargetMarkerName = "rocecap-target.json";

// A missing sequence number (a failed open during a full disk) does not end the search; this
// many in a row do.
inline constexpr uint64_t kSeqMissesAllowed = 64;

struct RecoverOptions {
  std::string by;     // "rocecapd 0.1.0" or "rocecap recover 0.1.0"
  bool apply = true;  // false: report only (files and manifest untouched)
  // Every output target of the run (output.directories), index as in the manifest's "targets";
  // [0] is the output_dir given to recover_run. Empty: output_dir is the only target.
  std::vector<std::filesystem::path> targets;
};

// One output target as recovery found it.
struct TargetFound {
  std::filesystem::path directory;
  uint64_t files = 0;   // files of the run found there (kept as listed when unreadable)
  std::string problem;  // why its run directory could not be read; empty: read
};

// Something at the name of a file of the run that is not a regular file (a symlink, a FIFO, a
// directory...): rocecapd never makes one, so it is not the run's. Recovery does not read, cut,
// follow or remove it, and does not list it among the run's files; its sequence number stays
// in use (the next attempt's file takes a free name). Listed in the manifest's
// recovery.skipped.
struct SkippedFile {
  std::size_t target = 0;
  std::string path;  // relative to the target's directory, as the run's files are listed
  std::string type;  // "symlink", "FIFO", "directory", "socket", "block device"...
};

struct RecoveryResult {
  bool needed = false;         // false: the manifest already matched the files; nothing was changed
  std::string reason;          // why it was needed ("state running", "2 files not listed", ...)
  std::string previous_state;  // of the manifest found ("" when there was none)
  uint64_t files = 0, trimmed = 0, unlisted = 0, removed = 0, missing = 0;
  uint64_t trimmed_bytes = 0;
  // Per writer, keyed by the name its file 0 has: 1 + its highest sequence number in use (a
  // writer without files is not listed). A continued run's writer starts there.
  std::map<std::string, uint64_t> next_seq;
  uint64_t next_seq_any = 0;       // 1 + the highest sequence number of any file of the run
  int attempt = 0;                 // the attempt that wrote the manifest found (1 for a first run)
  nlohmann::json manifest;         // the manifest as rewritten (or as found when not needed)
  std::vector<std::string> notes;  // one line per file cut, added, removed or missing
  std::vector<TargetFound> targets;  // per output target, as RecoverOptions::targets
  std::vector<SkippedFile> skipped;  // not regular files at the run's names (always reported)
};

// `output_dir` is where the manifest's relative paths and the name templates start (for the
// daemon config.output.directory; for the tool the run directory's parent). Throws
// std::runtime_error when a file cannot be read or cut, or the manifest cannot be written.
RecoveryResult recover_run(const config::RunConfig& config, const std::filesystem::path& output_dir,
                           const std::filesystem::path& run_dir, const RecoverOptions& options);

// The output targets of a run for RecoverOptions::targets: the manifest's "targets" (what the
// killed attempt used), else the run file's output.directories; [0] replaced by `output_dir`
// (where the run directory with the manifest is now).
std::vector<std::filesystem::path> run_targets(const nlohmann::json& manifest,
                                               const config::RunConfig& config,
                                               const std::filesystem::path& output_dir);

// The run file a manifest carries (config.text), loaded without host checks. Throws
// std::runtime_error naming the first problem.
config::RunConfig config_from_manifest(const nlohmann::json& manifest);

// Reads run_dir/manifest.json; null when there is none. Throws when it does not parse, or is
// not a regular file (never opened then: a FIFO would block).
nlohmann::json read_manifest(const std::filesystem::path& run_dir);

}  // namespace rocecap::rundir
