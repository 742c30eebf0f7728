#include "tests/support/run_command.hpp"

#include <sys/wait.h>

#include <cstdio>

namespace distlab::testing {

CommandOutput runCommandLine(const std::string& commandLine) {
  const std::string cmd = commandLine + " 2>&1";
  CommandOutput r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int status = pclose(p);
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

}  // namespace distlab::testing
