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
  // Takes `[flags] [--] PROGRAM [ARGS...]` (Note [Program after --]).
  bool takesProgram = false;
};

// Note [Program after --]
// CLI11 ends a subcommand at "--" when it has no positional left and hands
// what follows to the parent app, which rejects it; and it takes an unknown
// flag before PROGRAM as the program itself. So main() cuts argv at the first
// "--" after a takesProgram command's name, parses only what comes before, and
// leaves the rest here; the command then checks that nothing it did not know
// (a misspelt flag) came before PROGRAM.
struct ProgramArgs {
  bool sawDashes = false;             // "--" was given
  std::vector<std::string> afterDashes;
};
ProgramArgs& programArgs();

// The program and its arguments of a takesProgram command: what follows "--",
// else CLI11's unparsed rest, which must not start with a flag. Throws
// ValueError (exit 2) for an unknown flag, for arguments between the flags and
// "--", and for no program.
std::vector<std::string> programOf(const CLI::App& sub);

std::vector<Command>& commandRegistry();

struct CommandRegistrar {
  explicit CommandRegistrar(Command command) { commandRegistry().push_back(std::move(command)); }
};

}  // namespace distlab::cli
