// `rocecap recover RUN_DIR [--dry-run] [--json]`: make a run directory that a killed rocecapd
// left behind consistent again (rundir/recover.hpp): every file cut to its last whole frame or
// record on every output target of the run, manifest.json rebuilt from the files (state
// "recovered"). rocecapd does the same
// before it continues a run. Exit 0: recovered, or nothing to do; 2: the run directory or its
// manifest cannot be read, or a file cannot be cut; 3: a process holds the run directory.
#include <iostream>
#include <memory>

#include "rundir/recover.hpp"
#include "rundir/run_lock.hpp"
#include "tools/command.hpp"

#ifndef ROCECAP_VERSION
#define ROCECAP_VERSION "unknown"
#endif

namespace rocecap::tools {
namespace {

namespace fs = std::filesystem;

// With several output targets: the files found on each, and the targets that could not be read.
void print_targets(const rundir::RecoveryResult& r) {
  if (r.targets.size() < 2) return;
  for (std::size_t t = 0; t < r.targets.size(); ++t) {
    std::cout << "  target " << t << " " << r.targets[t].directory.string() << ": "
              << r.targets[t].files << " files";
    if (!r.targets[t].problem.empty())
      std::cout << "; CANNOT BE READ (" << r.targets[t].problem << "): listed files kept";
    std::cout << "\n";
  }
}

// Odd files at the run's names (rundir::SkippedFile): said every time, whatever the output.
void print_skipped(const rundir::RecoveryResult& r) {
  for (const rundir::SkippedFile& f : r.skipped) {
    std::cerr << "rocecap recover: skipped " << (r.targets[f.target].directory / f.path).string()
              << ": a " << f.type
              << ", not a regular file (not read, cut or listed as a file of the run; its "
                 "sequence number stays in use; listed in the manifest's recovery.skipped)\n";
  }
}

void print(const rundir::RecoveryResult& r, const fs::path& dir, bool dry_run) {
  for (const rundir::TargetFound& t : r.targets) {
    if (!t.problem.empty())
      std::cerr << "rocecap recover: output target " << t.directory.string()
                << " cannot be read: " << t.problem << "\n";
  }
  if (!r.needed) {
    std::cout << dir.string() << ": nothing to recover (manifest state \"" << r.previous_state
              << "\" matches the " << r.files << " files)\n";
    return;
  }
  std::cout << dir.string() << ": " << r.reason << "; "
            << (dry_run ? "would recover " : "recovered ") << r.files << " files: " << r.trimmed
            << " cut to their last whole record (" << r.trimmed_bytes << " bytes), " << r.unlisted
            << " not listed before, " << r.removed << " removed (no whole record), " << r.missing
            << " listed but missing\n";
  for (const std::string& n : r.notes)
    std::cout << "  " << n << "\n";
  print_targets(r);
  if (!dry_run)
    std::cout << "manifest " << (dir / rundir::kManifestName).string() << ": state \"recovered\"\n";
}

int recover(const fs::path& dir, bool dry_run, bool json) {
  std::unique_ptr<rundir::RunDirLock> lock;
  try {
    lock = std::make_unique<rundir::RunDirLock>(dir, "rocecap recover");
    if (!lock->warning().empty())
      std::cerr << "rocecap recover: warning: " << lock->warning() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "rocecap recover: " << e.what() << "\n";
    return 3;
  }
  try {
    const nlohmann::json found = rundir::read_manifest(dir);
    if (found.is_null()) {
      std::cerr << "rocecap recover: " << (dir / rundir::kManifestName).string()
                << ": no manifest (its run file names the files to recover)\n";
      return 2;
    }
    const config::RunConfig cfg = rundir::config_from_manifest(found);
    rundir::RecoverOptions o;
    o.by = std::string("rocecap recover ") + ROCECAP_VERSION;
    o.apply = !dry_run;
    // Files are listed relative to the output directory, the run directory's parent (with
    // several targets: relative to their target, the others as the manifest lists them).
    const fs::path out = fs::absolute(dir).lexically_normal().parent_path();
    o.targets = rundir::run_targets(found, cfg, out);
    const rundir::RecoveryResult r = rundir::recover_run(cfg, out, dir, o);
    print_skipped(r);
    if (json) {
      std::cout << r.manifest.dump(2) << "\n";
    } else {
      print(r, dir, dry_run);
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "rocecap recover: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace

void add_recover_command(CLI::App& app, Action& action) {
  struct Args {
    std::string dir;
    bool dry_run = false, json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "recover",
      "Repair a run directory left by a killed rocecapd: cut files to whole records, rebuild "
      "the manifest from the files (on every output target of the run)");
  cmd->add_option("RUN_DIR", args->dir,
                  "The run directory (holds manifest.json; with output.directories, the one on "
                  "the first target: the others are read from the manifest's targets)")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_flag("--dry-run", args->dry_run, "Report what would be done; change nothing");
  cmd->add_flag("--json", args->json, "Print the rebuilt manifest instead of the report");
  cmd->footer(
      "Exit codes: 0 recovered (or nothing to do), 2 cannot read or repair, 3 the run "
      "directory is in use by a running rocecapd");
  cmd->callback([args, &action] {
    action = [args] { return recover(args->dir, args->dry_run, args->json); };
  });
}

}  // namespace rocecap::tools
