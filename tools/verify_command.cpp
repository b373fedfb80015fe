// `rocecap verify --manifest M --expect SUMMARY [--json] [--strip-headers]`: exit 0 when the
// run's counters and files are what the generator's summary implies, 1 on any difference,
// 2 when an input cannot be read.
#include <iostream>
#include <memory>

#include "tools/command.hpp"
#include "tools/lib/verify.hpp"

namespace rocecap::tools {

void add_verify_command(CLI::App& app, Action& action) {
  struct Args {
    std::string manifest, expect;
    bool json = false, strip_headers = false;
    uint32_t reorder_window = 0;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "verify", "Check a rocecapd run (manifest and files) against a `rocecap gen` summary");
  cmd->add_option("--manifest", args->manifest, "The run's manifest.json")->required();
  cmd->add_option("--expect", args->expect, "The generator's JSON summary")->required();
  cmd->add_flag("--json", args->json, "JSON instead of the report");
  auto* strip = cmd->add_flag("--strip-headers", args->strip_headers,
                              "Raw files hold data only (default: as the run's config says)");
  auto* window = cmd->add_option("--reorder-window", args->reorder_window,
                                 "Reorder window in frames (default: as the run's config says)");
  cmd->callback([args, strip, window, &action] {
    action = [args, strip, window] {
      VerifyOptions options;
      if (strip->count() != 0) options.strip_headers = args->strip_headers;
      if (window->count() != 0) options.reorder_window = args->reorder_window;
      try {
        const VerifyResult r = verify_run(args->manifest, args->expect, options);
        if (args->json) {
          std::cout << to_json(r).dump(2) << "\n";
        } else {
          print_report(r, std::cout);
        }
        return r.ok() ? 0 : 1;
      } catch (const VerifyInputError& e) {
        std::cerr << "rocecap verify: " << e.what() << "\n";
        return 2;
      }
    };
  });
}

}  // namespace rocecap::tools
