#include "daemon/lib/run/run_attempt.hpp"

#include <unistd.h>

#include <optional>
#include <stdexcept>

#include "daemon/lib/run/run_assembly.hpp"
#include "rundir/attempts.hpp"
#include "rundir/recover.hpp"
#include "writers/output_path.hpp"

namespace rocecap::daemon {
namespace fs = std::filesystem;

RunAttempt begin_attempt(const config::RunConfig& cfg, const std::string& version,
                         spdlog::logger& log) {
  RunAttempt rd;
  rd.path = fs::path(cfg.output.directory) / cfg.run.name;
  std::error_code ec;
  rd.created = !fs::exists(rd.path, ec);
  // 0750 whatever the umask (writers/output_path.hpp), as RunDirectory would create it.
  if (const writers::Status s = writers::make_directories(rd.path); !s) {
    throw std::runtime_error("cannot create the run directory: " + s.message());
  }
  // Nothing (lock, recovered files, manifest) is written through a symlinked run directory.
  if (fs::is_symlink(fs::symlink_status(rd.path, ec))) {
    throw std::runtime_error("run directory " + rd.path.string() + " is a symlink (to " +
                             fs::read_symlink(rd.path, ec).string() +
                             "): refused, every file of a run stays inside output.directory");
  }
  if (std::string why; !writers::resolves_inside(rd.path, cfg.output.directory, why)) {
    throw std::runtime_error("run directory refused: " + why);
  }
  rd.lock = std::make_unique<rundir::RunDirLock>(rd.path, "rocecapd");
  if (!rd.lock->warning().empty()) log.warn("run lock: {}", rd.lock->warning());
  if (rd.created) return rd;
  rundir::RecoverOptions ro;
  ro.by = "rocecapd " + version;
  // The earlier attempt's files are named by its own run file (the manifest's snapshot), which
  // may differ from this one's; without a usable snapshot, by this one.
  std::optional<config::RunConfig> earlier;
  nlohmann::json found;
  try {
    found = rundir::read_manifest(rd.path);
    if (!found.is_null()) earlier = rundir::config_from_manifest(found);
  } catch (const std::exception& e) {
    log.warn("run directory {}: {}; recovering with this run file's names", rd.path.string(),
             e.what());
  }
  // Every target the earlier attempt wrote to: its files there are relisted and their numbers
  // stay in use, so no name is opened again on any target.
  ro.targets = rundir::run_targets(found, earlier ? *earlier : cfg, cfg.output.directory);
  const rundir::RecoveryResult r =
      rundir::recover_run(earlier ? *earlier : cfg, cfg.output.directory, rd.path, ro);
  // Targets the earlier attempt listed (its manifest's "targets") and wrote to: one that cannot
  // be read now is not this attempt's to write to (issue 23, item 10). A target new in this run
  // file has no run directory yet, which is no problem.
  const bool listed = found.is_object() && found.contains("targets");
  for (std::size_t t = 0; t < r.targets.size(); ++t) {
    if (r.targets[t].problem.empty()) continue;
    if (listed && t > 0) {
      rd.unavailable_targets[target_key(r.targets[t].directory)] = r.targets[t].problem;
    }
    log.error(
        "run directory {}: output target {} ({}) cannot be read for recovery: {}; its {} files "
        "listed in the manifest stay listed as they were, unchecked, and their numbers in use",
        rd.path.string(), t, r.targets[t].directory.string(), r.targets[t].problem,
        r.targets[t].files);
  }
  for (const rundir::SkippedFile& f : r.skipped) {
    log.warn(
        "run directory {}: {} is a {}, not a regular file: skipped (not read, cut or listed as "
        "a file of the run; its sequence number stays in use; listed in the manifest's "
        "recovery.skipped)",
        rd.path.string(), (r.targets[f.target].directory / f.path).string(), f.type);
  }
  if (r.needed) {
    log.warn(
        "run directory {}: attempt {} did not end cleanly ({}): recovered {} files ({} cut to "
        "their last whole record, {} bytes; {} not listed before; {} removed; {} missing)",
        rd.path.string(), r.attempt, r.reason, r.files, r.trimmed, r.trimmed_bytes, r.unlisted,
        r.removed, r.missing);
    for (const std::string& n : r.notes)
      log.info("recovery: {}", n);
  }
  rd.previous = r.manifest.contains("state") && r.manifest["state"] != "unknown" ? r.manifest
                                                                                 : nlohmann::json();
  rd.attempt = rundir::next_attempt(rd.previous);
  rd.next_seq = r.next_seq;
  rd.next_seq_any = r.next_seq_any;
  if (rd.attempt > 1) {
    log.warn(
        "run {}: restart: continuing as attempt {} (attempt {} ended {}); each writer's new "
        "files follow its earlier ones (sequence numbers up to {} in use); the manifest keeps "
        "every attempt",
        cfg.run.name, rd.attempt, rd.attempt - 1, rd.previous.value("state", "?"),
        rd.next_seq_any == 0 ? 0 : rd.next_seq_any - 1);
  }
  return rd;
}

void abandon_attempt(RunAttempt& rd) noexcept {
  if (!rd.created || rd.path.empty()) return;
  std::error_code ec;
  fs::remove(rd.path / rundir::kLockFileName, ec);
  fs::remove(rd.path / ".manifest-reserve", ec);
  rd.lock.reset();
  fs::remove(rd.path, ec);  // only when empty: never removes what someone else put there
}

}  // namespace rocecap::daemon
