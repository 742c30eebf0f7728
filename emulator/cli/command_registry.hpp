#pragma once
// Subcommands of the `distlab` CLI register themselves here, one file each
// (launch_command.cpp, run_command.cpp, bench_command.cpp, ...), so adding a
// command never touches main.cpp. Registration happens through static objects
// in the CLI executable's own sources (not a static library, where the linker
// could drop them).
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace distlab::cli {

struct Command {
  std::string name;
  std::string help;
  // Adds the subcommand's flags to `sub` and returns the action to run when it
  // is chosen. The action returns the process exit code.
  std::function<std::function<int()>(CLI::App& sub)> setup;
};

std::vector<Command>& commandRegistry();

struct CommandRegistrar {
  explicit CommandRegistrar(Command command) { commandRegistry().push_back(std::move(command)); }
};

}  // namespace distlab::cli
