// `rocecap`: the operator's and the tests' tool next to the daemon.
#include <exception>
#include <iostream>

#include "tools/command.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "rocecap: CODIF multicast traffic generator, capture inspection, verification and recovery"};
  app.require_subcommand(1);
  rocecap::tools::Action action;
  rocecap::tools::add_gen_command(app, action);
  rocecap::tools::add_inspect_command(app, action);
  rocecap::tools::add_verify_command(app, action);
  rocecap::tools::add_recover_command(app, action);
  rocecap::tools::add_trigger_command(app, action);
  CLI11_PARSE(app, argc, argv);
  try {
    return action ? action() : 2;
  } catch (const std::exception& e) {
    std::cerr << "rocecap: " << e.what() << "\n";
    return 1;
  }
}
