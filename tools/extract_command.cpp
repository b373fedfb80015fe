// `rocecap extract`: cuts a time window (flat, or dispersed with --dm) for chosen antennas or
// groups out of a finished or running run's raw files and writes what a triggered dump of that
// window would have written (doc/dumps.md, "Extracting from a recording"): per stream the
// time-aligned files and dump.json. Prints dump.json.
// Exit 0: written (parts of the window outside the recording are listed as not_recorded);
// 1: refused or failed (the message says why); 2: usage.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "config/run_config.hpp"
#include "daemon/lib/extract/extractor.hpp"
#include "daemon/lib/extract/frame_file.hpp"
#include "tools/command.hpp"
#include "tools/window_args.hpp"

namespace rocecap::tools {
namespace {

using nlohmann::json;

struct ExtractArgs : WindowArgs {
  std::string run_dir, json_text, out_dir;
  std::vector<std::string> formats;
};

int run_extract(const ExtractArgs& a) {
  if (a.json_text.empty() && (a.start.empty() || a.end.empty())) {
    std::cerr << "rocecap extract: give --start and --end (or --json)\n";
    return 2;
  }
  daemon::ExtractOptions o;
  o.run_dir = a.run_dir;
  o.request = a.json_text.empty() ? a.request().dump() : a.json_text;
  o.out_dir = a.out_dir;
  for (const std::string& f : a.formats) {
    std::optional<config::OutputFormat> v;
    for (auto x : {config::OutputFormat::raw, config::OutputFormat::codifhdr,
                   config::OutputFormat::vdifhdr, config::OutputFormat::pcap}) {
      if (config::to_string(x) == f) v = x;
    }
    if (!v) {
      std::cerr << "rocecap extract: --format " << f << ": not raw, codifhdr or vdifhdr\n";
      return 2;
    }
    o.formats.push_back(*v);
  }
  try {
    const daemon::ExtractOutcome out = daemon::extract(o);
    std::cout << out.dump.dump(2) << "\n";
    if (!out.ok) std::cerr << "rocecap extract: " << out.dump.value("error", "failed") << "\n";
    return out.ok ? 0 : 1;
  } catch (const daemon::ExtractError& e) {
    std::cerr << "rocecap extract: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace

void add_extract_command(CLI::App& app, Action& action) {
  auto a = std::make_shared<ExtractArgs>();
  CLI::App* cmd = app.add_subcommand(
      "extract",
      "Cut a time window out of a run's recorded raw files: writes what a triggered dump of that "
      "window would have written (files and dump.json) and prints dump.json");
  cmd->add_option("run", a->run_dir, "the run directory (<output.directory>/<run.name>)")
      ->required()
      ->check(CLI::ExistingDirectory);
  auto* start_opt = cmd->add_option(
      "--start", a->start, "window start: UTC (2026-11-23T22:40:01.25Z) or Unix nanoseconds");
  auto* end_opt = cmd->add_option("--end", a->end, "window end (exclusive), same forms");
  auto* antenna_opt =
      cmd->add_option("--antenna", a->antennas, "antenna to extract (repeat; default: all)");
  auto* group_opt = cmd->add_option("--group", a->groups,
                                    "group address[:port] to extract (repeat; default: all)");
  auto* label_opt = cmd->add_option("--label", a->label,
                                    "a name for the directory (<run>/extracts/NNNN-<label>)");
  auto* dm = cmd->add_option("--dm", a->dm,
                             "dispersion measure (pc cm^-3): each stream's window is shifted by "
                             "the delay at its frequencies (needs streams.frequencies)");
  auto* ref = cmd->add_option("--ref-freq", a->ref_freq,
                              "MHz: the frequency --start/--end are at (default: the top of "
                              "the band)")
                  ->needs(dm);
  cmd->add_option("--json", a->json_text,
                  "the whole request as JSON, as for rocecap trigger (doc/dumps.md); CODIF or "
                  "VDIF frame time {\"epoch\", \"seconds\", \"frame\"} only this way")
      ->excludes(start_opt, end_opt, antenna_opt, group_opt, label_opt, dm, ref);
  cmd->add_option("--format", a->formats,
                  "raw, codifhdr (CODIF) or vdifhdr (VDIF), repeat for several (default: the "
                  "run's retention.formats without pcap, else raw)");
  cmd->add_option("-o,--output", a->out_dir,
                  "directory for the files and dump.json (must be empty or new; default "
                  "<run>/extracts/NNNN[-label])");
  cmd->callback([a, &action] { action = [a] { return run_extract(*a); }; });
}

}  // namespace rocecap::tools
