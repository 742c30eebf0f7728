#pragma once
// Reads a scenario file (TOML; the format reference is scenarios/README.md)
// into a Scenario, validating it completely.
//
// Every mistake throws ValueError whose message starts with `file:line: `:
// TOML syntax errors, unknown keys (with the known ones listed), wrong types,
// impossible values (a rank >= world_size, a root outside its group, a fault at
// a sequence number or step that never runs, a fault kind the workload cannot
// have), and missing required keys (line of the enclosing table).
#include <string>
#include <vector>

#include "emulator/scenario/scenario.hpp"

namespace distlab::emulator {

struct ParseOptions {
  // `distlab launch --scenario FILE PROG ARGS...`: the program to run. The
  // file may then omit [workload] (it becomes kind = "program" with this
  // command) or give kind = "program" (this command replaces its own); any
  // other kind is an error naming the conflict.
  std::vector<std::string> programCommand;
};

Scenario parseScenarioFile(const std::string& path, const ParseOptions& options = {});
// `path` is only used in messages.
Scenario parseScenarioText(const std::string& text, const std::string& path,
                           const ParseOptions& options = {});

// Number of world-group collectives rank `rank` issues in a collective script
// (the highest sequence number it reaches).
uint64_t worldCollectiveCount(const Scenario& scenario, int rank);
// How many `kind` ("send" or "recv") operations `rank` issues on the world
// group, only those with `peer` when it is not -1.
uint64_t pointToPointCount(const Scenario& scenario, int rank, const std::string& kind, int peer);

}  // namespace distlab::emulator
