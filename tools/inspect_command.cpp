// `rocecap inspect FILE [--json] [--vdif FPS]`: per-stream contents of a pcap, raw CODIF or raw
// VDIF file.
#include <iostream>
#include <memory>

#include "tools/command.hpp"
#include "tools/lib/inspect.hpp"

namespace rocecap::tools {

void add_inspect_command(CLI::App& app, Action& action) {
  struct Args {
    std::string file;
    bool json = false;
    uint64_t vdif_fps = 0;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "inspect", "Per-stream frames, gaps, duplicates and rejects of a pcap or raw CODIF file");
  cmd->add_option("FILE", args->file, "pcap file (us or ns, Ethernet) or raw CODIF file")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_flag("--json", args->json, "JSON instead of the table");
  cmd->add_option("--vdif", args->vdif_fps,
                  "Read FILE as raw VDIF with this many frames per second (not in VDIF headers)");
  cmd->callback([args, &action] {
    action = [args] {
      try {
        const InspectReport report = inspect_file(args->file, args->vdif_fps);
        if (args->json) {
          std::cout << to_json(report).dump(2) << "\n";
        } else {
          print_table(report, std::cout);
        }
        return 0;
      } catch (const std::runtime_error& e) {
        std::cerr << "rocecap inspect: " << e.what() << "\n";
        return 1;
      }
    };
  });
}

}  // namespace rocecap::tools
