// `distlab run` end to end: a malformed file is a file:line error with exit
// code 2 (never a crash), a passing scenario exits 0, a failed expectation
// exits 1, and --out writes the JSON result.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/temp_dir.hpp"

namespace {

struct RunResult {
  int exitCode = -1;
  std::string output;
};

RunResult runDistlab(const std::string& args) {
  std::string cmd = std::string(DISTLAB_CLI_PATH) + " " + args + " 2>&1";
  RunResult r;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  int status = pclose(p);
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

const char* kOk = R"(name = "ok"
description = "two ranks allreduce"
group = "test"
[cluster]
world_size = 2
[workload]
kind = "collectives"
[[workload.steps]]
op = "allreduce"
numel = 64
[expect]
outcome = "success"
)";

TEST(RunCommand, MalformedFileIsAFileLineErrorAndExitCode2) {
  distlab::testing::TempDir dir;
  write(dir.file("bad.toml"), std::string(kOk) + "surprise = 1\n");
  RunResult r = runDistlab("run " + dir.file("bad.toml"));
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find(dir.file("bad.toml") + ":13: unknown key 'surprise'"),
            std::string::npos) << r.output;
  EXPECT_NE(r.output.find("0 passed, 0 failed, 1 malformed"), std::string::npos) << r.output;
}

TEST(RunCommand, PassingScenarioExitsZeroAndWritesJson) {
  distlab::testing::TempDir dir;
  write(dir.file("ok.toml"), kOk);
  RunResult r = runDistlab("run " + dir.file("ok.toml") + " --out " + dir.file("out"));
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("PASS  test/ok"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("1 scenarios: 1 passed, 0 failed"), std::string::npos) << r.output;
  EXPECT_TRUE(std::filesystem::exists(dir.file("out/test__ok.json")));
}

TEST(RunCommand, FailedExpectationExitsOne) {
  distlab::testing::TempDir dir;
  std::string text = kOk;
  text.replace(text.find("outcome = \"success\""), 19, "outcome = \"timeout\"");
  write(dir.file("wrong.toml"), text);
  RunResult r = runDistlab("run " + dir.file("wrong.toml"));
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("FAIL  test/ok"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("wrong.toml:11: expected outcome timeout, observed success"),
            std::string::npos) << r.output;
}

TEST(RunCommand, MissingPathIsAnError) {
  RunResult r = runDistlab("run /nonexistent/dir");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("/nonexistent/dir: no such scenario file or folder"),
            std::string::npos) << r.output;
}

}  // namespace
