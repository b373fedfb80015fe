// rocecapd: the capture daemon. One run file (YAML) per observing run.
#include <CLI/CLI.hpp>
#include <iostream>

#include "config/loader.hpp"
#include "config/problem.hpp"
#include "daemon/lib/reporting/logging.hpp"
#include "daemon/lib/run/check_config.hpp"
#include "daemon/lib/run/run.hpp"

namespace {

constexpr const char* kExitCodes =
    "Exit codes:\n"
    "  0  the run ended (duration, packet count, end of replay, SIGINT or SIGTERM); files and\n"
    "     manifest complete (frames a full disk kept out are counted there as write_error,\n"
    "     triggered dumps that could not be written are \"failed\" in its triggers)\n"
    "  1  bad command line\n"
    "  2  the run file has problems (every one is printed as file:line:column: key: what)\n"
    "  3  could not start (interface, replay file, output directory, permissions, the\n"
    "     metrics port or retention.socket in use by another process, its PID named);\n"
    "     nothing is left behind: a run directory this start created is removed again\n"
    "  4  a capture loop failed during the run (files written so far are valid)\n"
    "  5  storage lost: the run could not be recorded as asked (run directory removed or\n"
    "     replaced, a file deleted, EIO from the disk, or the final manifest not written);\n"
    "     the run stops at once; what the manifest could record says why. With several\n"
    "     output targets, files already written lost with one of them (its run directory\n"
    "     removed or replaced, unmounted or mounted over): the run goes on on the others\n"
    "     and then exits 5; the manifest lists those files and counts their frames\n"
    "     (storage_lost)\n"
    "  6  the run directory is in use: another rocecapd (or `rocecap recover`) holds its lock,\n"
    "     its PID is named; nothing was changed\n"
    "Signals: SIGINT/SIGTERM stop the run cleanly, SIGHUP starts new output files. A second\n"
    "SIGINT/SIGTERM while the run drains (e.g. from `timeout`, which also signals its process\n"
    "group) is ignored: the drain is bounded (about 100 ms per capture loop, then the writers\n"
    "finish), and the exit status stays that of the run.\n"
    "Restart: started on a run directory that already holds the run (after a crash, or a\n"
    "finished run started again), rocecapd recovers it like `rocecap recover` and continues\n"
    "it as the next attempt: each writer's files continue its sequence numbers, the\n"
    "manifest keeps every attempt (\"attempts\"). An output target an earlier attempt wrote\n"
    "to that cannot be read then is left out of rotation for the attempt, never re-created.\n"
    "A second rocecapd on the same run\n"
    "directory exits 6 naming the first one's PID.";

}  // namespace

int main(int argc, char** argv) {
  using namespace rocecap;
  using namespace rocecap::daemon;
  CLI::App app{"rocecapd: capture CODIF/UDP multicast streams into per-antenna files"};
  app.footer(kExitCodes);
  std::string config_path, check_path;
  bool version = false;
  double status_seconds = 5;
  double metrics_linger = 0;
  app.add_option("--config,-c", config_path, "run file (YAML) to run")->check(CLI::ExistingFile);
  app.add_option("--check-config", check_path, "validate a run file, print its summary, exit");
  app.add_option("--status-interval", status_seconds,
                 "seconds between status lines in the log (default 5)")
      ->check(CLI::Range(0.1, 3600.0));
  app.add_flag("--version", version, "print the version and exit");
  app.add_option("--metrics-linger", metrics_linger,
                 "seconds to keep serving metrics after the run stops (final counts)")
      ->check(CLI::Range(0.0, 3600.0));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : daemon::kExitUsage;
  }
  if (version) {
    std::cout << "rocecapd " << ROCECAP_VERSION << "\n";
    return daemon::kExitOk;
  }
  if (!check_path.empty()) return daemon::run_check_config(check_path, std::cout, std::cerr);
  if (config_path.empty()) {
    std::cerr << "rocecapd: give --config FILE (or --check-config FILE); see --help\n";
    return daemon::kExitUsage;
  }
  const config::LoadResult loaded = config::load_file(config_path);
  if (!loaded.ok()) {
    for (const auto& p : loaded.problems)
      std::cerr << config::format_problem(p) << "\n";
    std::cerr << config_path << ": " << loaded.problems.size() << " problem(s), nothing started\n";
    return daemon::kExitConfig;
  }
  daemon::RunOptions options;
  options.log = make_logger(std::string(config::to_string(loaded.config->logging.level)),
                            stderr_is_journal());
  options.status_interval = std::chrono::milliseconds(static_cast<int64_t>(status_seconds * 1000));
  options.metrics_linger = std::chrono::milliseconds(static_cast<int64_t>(metrics_linger * 1000));
  return daemon::run(*loaded.config, options);
}
