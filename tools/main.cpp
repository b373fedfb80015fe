// `rocecap`: the operator's and the tests' tool next to the daemon.
#include <cstring>
#include <exception>
#include <iostream>
#include <string>

#include "tools/command.hpp"

namespace {

// The first word that is not an option names the subcommand. CLI11 answers `rocecap nosuch
// --help` with the general help and exit 0, and `rocecap nosuch` with "A subcommand is
// required": neither says that `nosuch` is not one. Empty when the word is a subcommand (or
// there is none: CLI11 reports that itself).
std::string unknown_subcommand(const CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] == '-') continue;  // the app's own options take no values (--help)
    for (const CLI::App* sub : app.get_subcommands({})) {
      if (sub->get_name() == argv[i]) return {};
    }
    std::string known;
    for (const CLI::App* sub : app.get_subcommands({}))
      known += (known.empty() ? "" : ", ") + sub->get_name();
    return "rocecap: unknown subcommand '" + std::string(argv[i]) + "'; the subcommands are " +
           known + " (rocecap --help)";
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "rocecap: CODIF and VDIF traffic generator, capture inspection, verification, recovery, "
      "triggered dumps, extracts from recordings, quick-look pictures and tapping a running capture"};
  app.require_subcommand(1);
  app.footer("Exit codes: each subcommand's --help; 1 an unknown subcommand");
  rocecap::tools::Action action;
  rocecap::tools::add_gen_command(app, action);
  rocecap::tools::add_inspect_command(app, action);
  rocecap::tools::add_verify_command(app, action);
  rocecap::tools::add_recover_command(app, action);
  rocecap::tools::add_trigger_command(app, action);
  rocecap::tools::add_extract_command(app, action);
  rocecap::tools::add_tap_command(app, action);
  rocecap::tools::add_fleet_command(app, action);
  rocecap::tools::add_quicklook_command(app, action);
  if (const std::string why = unknown_subcommand(app, argc, argv); !why.empty()) {
    std::cerr << why << "\n";
    return 1;
  }
  CLI11_PARSE(app, argc, argv);
  try {
    return action ? action() : 2;
  } catch (const std::exception& e) {
    std::cerr << "rocecap: " << e.what() << "\n";
    return 1;
  }
}
