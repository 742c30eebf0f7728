// `distlab`: the command-line front door (launch, run, bench, analyze, demo).
// Exit codes: 0 success (and --help), 1 the command failed, 2 a usage error
// (an unknown flag, a malformed value, an unusable path) or bad input.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <map>

#include "emulator/cli/command_registry.hpp"
#include "emulator/cli/usage_checks.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::cli {

std::vector<Command>& commandRegistry() {
  static std::vector<Command> registry;
  return registry;
}

ProgramArgs& programArgs() {
  static ProgramArgs args;
  return args;
}

std::vector<std::string> programOf(const CLI::App& sub) {
  std::vector<std::string> rest = sub.remaining();
  const std::string name = sub.get_name();
  if (programArgs().sawDashes) {
    if (!rest.empty()) {
      throw ValueError(fmt::format("{}: unexpected '{}' before '--' (flags go before '--', "
                                   "the program after it)", name, rest.front()));
    }
    rest = programArgs().afterDashes;
    if (rest.empty()) throw ValueError(fmt::format("{}: no program after '--'", name));
    return rest;
  }
  if (rest.empty()) throw ValueError(fmt::format("{}: no program given (usage: distlab {} "
                                                 "[flags] [--] PROGRAM [ARGS...])", name, name));
  if (rest.front().size() > 1 && rest.front()[0] == '-') {
    throw ValueError(fmt::format("{}: unknown flag '{}' (see distlab {} --help; a program whose "
                                 "name starts with '-' goes after '--')", name, rest.front(),
                                 name));
  }
  return rest;
}

namespace {

// Note [Program after --]: keeps argv up to the first "--" after a
// takesProgram command's name; the rest goes to programArgs().
std::vector<std::string> splitProgram(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  if (args.size() < 2) return args;
  bool takesProgram = false;
  for (const auto& c : commandRegistry()) takesProgram |= c.name == args[1] && c.takesProgram;
  if (!takesProgram) return args;
  auto dashes = std::find(args.begin() + 2, args.end(), std::string("--"));
  if (dashes == args.end()) return args;
  programArgs().sawDashes = true;
  programArgs().afterDashes.assign(dashes + 1, args.end());
  args.erase(dashes, args.end());
  return args;
}

// CLI11 answers an unknown first argument with "A subcommand is required";
// name it instead. Returns the message, or "" when the argument is fine.
std::string unknownCommand(const std::vector<std::string>& args) {
  if (args.size() < 2 || args[1] == "--help" || args[1] == "-h") return "";
  std::vector<std::string> names;
  for (const auto& c : commandRegistry()) {
    if (c.name == args[1]) return "";
    if (!c.help.empty()) names.push_back(c.name);  // hidden commands have no help
  }
  return fmt::format("distlab: unknown {} '{}'; commands: {} (see distlab --help)",
                     args[1][0] == '-' ? "flag" : "command", args[1], fmt::join(names, ", "));
}

}  // namespace

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
  requireExplicitValues(app);  // Note [One reader for command lines]
  try {
    std::vector<std::string> args = splitProgram(argc, argv);
    if (const std::string bad = unknownCommand(args); !bad.empty()) {
      std::fprintf(stderr, "%s\n", bad.c_str());
      return 2;
    }
    args.erase(args.begin());
    std::reverse(args.begin(), args.end());  // CLI11 takes them last-first
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    // --help exits 0; every usage error (unknown flag, bad value, missing
    // argument) exits 2, whatever CLI11's own code for it.
    return app.exit(e) == 0 ? 0 : 2;
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
