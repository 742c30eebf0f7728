// Every bench binary's command line (Note [Bench command lines] in
// bench/common/bench_args.hpp), run for real: an unknown flag and a malformed
// value exit 2 naming the flag; --help exits 0, prints the usage and runs no
// benchmark.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Ran {
  int exitCode = -1;
  std::string output;  // stdout and stderr
};

Ran run(const std::string& binary, const std::string& args) {
  const std::string cmd = "timeout -s KILL 60 " + binary + " " + args + " 2>&1";
  Ran r;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) r.output.append(buf, n);
  const int status = pclose(p);
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// name -> path, from "name=path,name=path" (CMake fills in the built binaries).
std::map<std::string, std::string> benches() {
  std::map<std::string, std::string> out;
  std::stringstream in(DISTLAB_BENCH_BINARIES);
  for (std::string item; std::getline(in, item, ',');) {
    out[item.substr(0, item.find('='))] = item.substr(item.find('=') + 1);
  }
  return out;
}

// A malformed value of one of the binary's own flags (or a Google Benchmark one).
const std::map<std::string, std::vector<std::pair<std::string, std::string>>> kMalformed = {
    {"gemm_bench", {{"--benchmark_repetitions=abc", "--benchmark_repetitions=abc"},
                    {"--benchmark_format=xml", "--benchmark_format = 'xml'"},
                    {"--benchmark_out=/nonexistent-dir/x.json", "--benchmark_out"}}},
    {"elementwise_bench", {{"--benchmark_min_time=soon", "--benchmark_min_time=soon"}}},
    {"tcp_store_bench", {{"--benchmark_out_format=yaml", "--benchmark_out_format = 'yaml'"}}},
    {"mlp_step_bench", {{"--rounds=many", "--rounds"},
                        {"--rounds=0", "--rounds"},
                        {"--report=/nonexistent-dir/r", "--report /nonexistent-dir/r.json"}}},
    {"ddp_step_bench", {{"--worlds=2,x", "--worlds '2,x': 'x' is not an integer in [2, 64]"},
                        {"--worlds=", "--worlds: give at least one value"},
                        {"--worlds=,", "--worlds ',': '' is not an integer"},
                        {"--caps=1,nan", "--caps '1,nan': 'nan' is not a number"},
                        {"--rounds=-1", "--rounds"}}},
    {"detail_overhead_bench", {{"--ranks abc", "--ranks"},
                               {"--ranks 1", "--ranks"},
                               {"--json /nonexistent-dir/o.json", "--json /nonexistent-dir"}}},
};

TEST(BenchCli, EveryBinaryIsCovered) {
  for (const auto& [name, path] : benches()) {
    EXPECT_TRUE(kMalformed.count(name)) << name << " has no malformed-value case";
  }
  EXPECT_GE(benches().size(), 3u);
}

TEST(BenchCli, UnknownFlagExitsTwoNamingIt) {
  for (const auto& [name, path] : benches()) {
    const Ran r = run(path, "--no-such-flag=1");
    EXPECT_EQ(r.exitCode, 2) << name << "\n" << r.output;
    EXPECT_NE(r.output.find("--no-such-flag"), std::string::npos) << name << "\n" << r.output;
    const Ran b = run(path, "--benchmark_no_such_flag=1");
    EXPECT_EQ(b.exitCode, 2) << name << "\n" << b.output;
    EXPECT_NE(b.output.find("--benchmark_no_such_flag"), std::string::npos) << name;
  }
}

TEST(BenchCli, MalformedValueExitsTwoNamingTheFlag) {
  for (const auto& [name, path] : benches()) {
    auto cases = kMalformed.find(name);
    if (cases == kMalformed.end()) continue;
    for (const auto& [args, message] : cases->second) {
      const Ran r = run(path, args);
      EXPECT_EQ(r.exitCode, 2) << name << " " << args << "\n" << r.output;
      EXPECT_NE(r.output.find(message), std::string::npos) << name << " " << args << "\n"
                                                            << r.output;
    }
  }
}

TEST(BenchCli, HelpPrintsUsageAndRunsNothing) {
  for (const auto& [name, path] : benches()) {
    const Ran r = run(path, "--help");
    EXPECT_EQ(r.exitCode, 0) << name << "\n" << r.output;
    EXPECT_NE(r.output.find("Usage: " + name), std::string::npos) << name << "\n" << r.output;
    // Google Benchmark prints "Run on (N X CPU s)" before the first benchmark; the
    // side-by-side benches print their figures.
    EXPECT_EQ(r.output.find("Run on ("), std::string::npos) << name << "\n" << r.output;
    EXPECT_EQ(r.output.find("wall_ms="), std::string::npos) << name << "\n" << r.output;
    EXPECT_EQ(r.output.find("step_ms"), std::string::npos) << name << "\n" << r.output;
  }
}

}  // namespace
