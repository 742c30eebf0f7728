// `distlab`: the command-line front door (launch, run, bench, analyze, demo).
#include <cstdio>
#include <exception>
#include <map>

#include "emulator/cli/command_registry.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::cli {

std::vector<Command>& commandRegistry() {
  static std::vector<Command> registry;
  return registry;
}

}  // namespace distlab::cli

int main(int argc, char** argv) {
  using namespace distlab::cli;
  CLI::App app{"distlab: a distributed-training runtime and test harness", "distlab"};
  app.require_subcommand(1);
  std::map<CLI::App*, std::function<int()>> actions;
  for (const auto& command : commandRegistry()) {
    CLI::App* sub = app.add_subcommand(command.name, command.help);
    actions[sub] = command.setup(*sub);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (auto& [sub, action] : actions) {
      if (sub->parsed()) return action();
    }
  } catch (const distlab::ValueError& e) {
    std::fprintf(stderr, "distlab: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "distlab: %s\n", e.what());
    return 1;
  }
  return 0;
}
