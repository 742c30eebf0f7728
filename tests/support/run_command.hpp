#pragma once
// Runs a shell command line (with 2>&1 appended) and collects its exit code
// and combined output, for tests that drive the `distlab` CLI end to end.
#include <string>

namespace distlab::testing {

struct CommandOutput {
  int exitCode = -1;  // 128 + signal when killed by one
  std::string output;
};

CommandOutput runCommandLine(const std::string& commandLine);

}  // namespace distlab::testing
