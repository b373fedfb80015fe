// `rocecap inspect FILE|RUN_DIR|manifest.json [--json] [--vdif FPS [--vtp]]`: per-stream
// contents of a pcap (of CODIF or VDIF datagrams), raw CODIF or raw VDIF file, or of a whole
// run: every raw and pcap file its manifest lists, in manifest order, each read from its output
// target (tools/lib/inspect_run.hpp).
#include <iostream>
#include <memory>

#include "tools/command.hpp"
#include "tools/lib/inspect.hpp"
#include "tools/lib/inspect_run.hpp"

namespace rocecap::tools {
namespace {

int inspect_one_file(const std::string& file, bool json, uint64_t vdif_fps, bool vtp) {
  const InspectReport report = inspect_file(file, vdif_fps, vtp);
  if (json) {
    std::cout << to_json(report).dump(2) << "\n";
  } else {
    print_table(report, std::cout);
  }
  return 0;
}

// Exit 1 when a listed file could not be read (the report covers the others).
int inspect_whole_run(const std::string& path, bool json, uint64_t vdif_fps, bool vtp) {
  const RunInspectReport report = inspect_run(path, vdif_fps, vtp);
  if (json) {
    std::cout << to_json(report).dump(2) << "\n";
  } else {
    print_table(report, std::cout);
  }
  for (const std::string& u : report.unreadable)
    std::cerr << "rocecap inspect: " << u << "\n";
  return report.unreadable.empty() ? 0 : 1;
}

}  // namespace

void add_inspect_command(CLI::App& app, Action& action) {
  struct Args {
    std::string file;
    bool json = false;
    uint64_t vdif_fps = 0;
    bool vtp = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "inspect",
      "Per-stream frames, gaps, duplicates and rejects of a pcap, raw CODIF or raw VDIF file, "
      "or of a whole run (all its files, on every output target)");
  cmd->add_option("FILE", args->file,
                  "pcap file (us or ns, Ethernet; CODIF datagrams, or VDIF with --vdif) or raw "
                  "CODIF file; or a run directory or its manifest.json: the run's raw and pcap "
                  "files in manifest order, each read from its output target, reported as one")
      ->required()
      ->check(CLI::ExistingPath);
  cmd->add_flag("--json", args->json, "JSON instead of the table");
  auto* vdif = cmd->add_option(
      "--vdif", args->vdif_fps,
      "Read VDIF frames at this many frames per second (not in VDIF headers): a raw VDIF "
      "FILE, or a pcap's UDP payloads (streams by group, port, source and thread); for a run, "
      "its run file's streams.frames_per_second unless given");
  cmd->add_flag("--vtp", args->vtp,
                "With --vdif on a pcap: each UDP payload starts with the 8-byte VTP sequence "
                "number (a run: as its run file says)")
      ->needs(vdif);
  cmd->footer(
      "Exit codes: 0 read, 1 a file (or a file the manifest lists) cannot be read, or is not "
      "what it was asked to be read as (a pcap of VDIF frames without --vdif)");
  cmd->callback([args, &action] {
    action = [args] {
      try {
        if (is_run_path(args->file))
          return inspect_whole_run(args->file, args->json, args->vdif_fps, args->vtp);
        return inspect_one_file(args->file, args->json, args->vdif_fps, args->vtp);
      } catch (const std::runtime_error& e) {
        std::cerr << "rocecap inspect: " << e.what() << "\n";
        return 1;
      }
    };
  });
}

}  // namespace rocecap::tools
