// How a subcommand plugs into `rocecap`: it adds itself to the CLI11 app and, when chosen,
// leaves the function to run in `action` (called after parsing; its value is the exit code).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace rocecap::tools {

using Action = std::function<int()>;

void add_gen_command(CLI::App& app, Action& action);
void add_inspect_command(CLI::App& app, Action& action);
void add_verify_command(CLI::App& app, Action& action);
void add_recover_command(CLI::App& app, Action& action);
void add_trigger_command(CLI::App& app, Action& action);
void add_quicklook_command(CLI::App& app, Action& action);
void add_tap_command(CLI::App& app, Action& action);
void add_fleet_command(CLI::App& app, Action& action);
void add_extract_command(CLI::App& app, Action& action);

}  // namespace rocecap::tools
