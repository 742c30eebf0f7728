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
    {"gemm_bench", {{"--benchmark_repetitions=abc", "--benchmark_repetitions='abc'"},
                    {"--benchmark_format=xml", "--benchmark_format='xml'"},
                    {"--benchmark_out=/nonexistent-dir/x.json", "--benchmark_out"}}},
    {"elementwise_bench", {{"--benchmark_min_time=soon", "--benchmark_min_time='soon'"}}},
    {"tcp_store_bench", {{"--benchmark_out_format=yaml", "--benchmark_out_format='yaml'"}}},
    {"mlp_step_bench", {{"--rounds=many", "--rounds"},
                        {"--torch_cpu_script=/nonexistent.py", "--torch_cpu_script"},
                        {"--torch_script", "--torch_script"},
                        {"--rounds=0", "--rounds"},
                        {"--report=/nonexistent-dir/r", "--report /nonexistent-dir/r.json"}}},
    {"ddp_step_bench", {{"--worlds=2,x", "--worlds '2,x': 'x' is not an integer in [2, 64]"},
                        {"--worlds=", "--worlds: an empty value is not allowed"},
                        {"--worlds=,", "--worlds ',': empty item in the comma list"},
                        {"--worlds=2,", "--worlds '2,': empty item in the comma list"},
                        {"--rounds=", "--rounds: an empty value is not allowed"},
                        {"--torch_script=/nonexistent.py", "--torch_script /nonexistent.py: "
                                                            "cannot read this file"},
                        {"--caps=1,nan", "--caps '1,nan': 'nan' is not a number"},
                        {"--rounds=-1", "--rounds"}}},
    {"trace_bench", {{"--benchmark_filter", "--benchmark_filter needs a value"}}},
    {"fsdp_step_bench", {{"--worlds=2,,4", "--worlds '2,,4': empty item"},
                         {"--link=", "--link: an empty value is not allowed"}}},
    {"cuda_gemm_bench", {{"--sizes=64,", "--sizes '64,': empty item"}}},
    {"detail_overhead_bench", {{"--ranks abc", "--ranks"},
                               {"--json=", "--json: an empty value is not allowed"},
                               {"--rounds=3 --rounds=", "--rounds: an empty value"},
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

// The binaries that hand --benchmark_* flags to Google Benchmark.
const std::vector<std::string> kGoogleBenchmarkBinaries = {
    "gemm_bench", "elementwise_bench", "mlp_step_bench", "tcp_store_bench", "trace_bench"};

// Values Google Benchmark 1.7 itself would crash on (std::length_error, rc
// 134), answer with exit 0, or silently take as its default.
const std::vector<std::pair<std::string, std::string>> kBadGoogleBenchmarkValues = {
    {"--benchmark_repetitions=-1", "--benchmark_repetitions='-1': give a whole number"},
    {"--benchmark_repetitions=0", "--benchmark_repetitions='0'"},
    {"--benchmark_repetitions=99999999999", "--benchmark_repetitions='99999999999'"},
    {"--benchmark_filter=[", "--benchmark_filter='[': not a regular expression"},
    {"--benchmark_filter=", "--benchmark_filter='': give a regular expression"},
    {"--benchmark_min_time=-1", "--benchmark_min_time='-1': give a number of seconds"},
    {"--benchmark_min_time=nan", "--benchmark_min_time='nan'"},
    {"--benchmark_list_tests=maybe", "--benchmark_list_tests='maybe': give true or false"},
    {"--benchmark_time_unit=h", "--benchmark_time_unit='h': give one of ns, us, ms, s"},
    {"--benchmark_out=", "--benchmark_out='': give a value"},
};

TEST(BenchCli, BadGoogleBenchmarkValuesExitTwoBeforeRunning) {
  const auto all = benches();
  for (const std::string& name : kGoogleBenchmarkBinaries) {
    const auto it = all.find(name);
    if (it == all.end()) continue;  // not built in this configuration
    for (const auto& [args, message] : kBadGoogleBenchmarkValues) {
      const Ran r = run(it->second, args);
      EXPECT_EQ(r.exitCode, 2) << name << " " << args << "\n" << r.output;
      EXPECT_NE(r.output.find(message), std::string::npos) << name << " " << args << "\n"
                                                            << r.output;
      EXPECT_EQ(r.output.find("Run on ("), std::string::npos) << name << " " << args;
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
