// `distlab run` end to end: a malformed file is a file:line error with exit
// code 2 (never a crash), a passing scenario exits 0, a failed expectation
// exits 1, and --out writes the JSON result.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

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
op = "all_reduce"
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
  EXPECT_NE(r.output.find("0 passed, 0 failed, 0 skipped, 1 malformed"), std::string::npos)
      << r.output;
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

// [expect.predicted]: the traced steps replayed at world 64 on the network
// model. A bound far above the prediction passes; one far below fails naming
// the predicted step (the steps sleep 20 ms, so the prediction is at least
// that: 1 ms cannot hold, 10 s always does).
TEST(RunCommand, PredictedStepBoundsPassOrFailNamingThePrediction) {
  distlab::testing::TempDir dir;
  const auto scenario = [](const std::string& bound) {
    return std::string(R"(name = "predicted"
description = "compute and an all_reduce, predicted at world 64"
group = "test"
[cluster]
world_size = 2
topology = "ranks_per_node=8,intra=2:100,inter=5:10"
[workload]
kind = "collectives"
iterations = 4
[[workload.steps]]
op = "compute"
compute_ms = 20
[[workload.steps]]
op = "all_reduce"
numel = 1024
[expect]
outcome = "success"
[expect.predicted]
world = 64
)") + bound + "\n";
  };
  write(dir.file("loose.toml"), scenario("step_time_max = 10"));
  RunResult r = runDistlab("run " + dir.file("loose.toml"));
  EXPECT_EQ(r.exitCode, 0) << r.output;
  write(dir.file("tight.toml"), scenario("step_time_max = 0.001"));
  r = runDistlab("run " + dir.file("tight.toml"));
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("predicted step at world 64 on ranks_per_node=8,intra=2:100,inter=5:10"),
            std::string::npos) << r.output;
  EXPECT_NE(r.output.find("above step_time_max = 0.001 s"), std::string::npos) << r.output;
}

TEST(RunCommand, OneMalformedFileNeverStopsTheOthers) {
  distlab::testing::TempDir dir;
  const std::string ok = kOk;
  std::string hugeSize = ok, nanTimeout = ok, badRankKey = ok;
  hugeSize.replace(hugeSize.find("numel = 64"), 10, "size = \"99999999999999999999B\"");
  nanTimeout.replace(nanTimeout.find("world_size = 2"), 14, "world_size = 2\ntimeout = nan");
  badRankKey.replace(badRankKey.find("numel = 64"), 10,
                     "numel = 64\n[workload.steps.per_rank.1abc]\nnumel = 8");
  write(dir.file("a_ok.toml"), ok);
  write(dir.file("b_size.toml"), hugeSize);
  write(dir.file("c_timeout.toml"), nanTimeout);
  write(dir.file("d_rank.toml"), badRankKey);
  write(dir.file("e_ok.toml"), ok);
  RunResult r = runDistlab("run " + dir.path());
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find(dir.file("b_size.toml") + ":10: 'size' = \"99999999999999999999B\": "
                          "the number overflows a 64-bit byte count"),
            std::string::npos) << r.output;
  EXPECT_NE(r.output.find(dir.file("c_timeout.toml") + ":6: 'timeout' = nan is not a finite "
                          "number; allowed: (0, 600] s"),
            std::string::npos) << r.output;
  EXPECT_NE(r.output.find(dir.file("d_rank.toml") + ":11: per_rank key '1abc' is not a rank"),
            std::string::npos) << r.output;
  EXPECT_NE(r.output.find("5 scenarios: 2 passed, 0 failed, 0 skipped, 3 malformed"),
            std::string::npos)
      << r.output;
}

// A rank whose loss overflows: the run completes, every result file is strict
// JSON (nlohmann rejects a bare NaN), the non-finite losses read back as
// strings, and the diagnosis names the rank and the step.
TEST(RunCommand, NonFiniteLossKeepsResultFilesValidAndIsDiagnosed) {
  distlab::testing::TempDir dir;
  const std::string scenario =
      std::string(DISTLAB_SOURCE_DIR) + "/scenarios/training/non_finite_after_bit_flip.toml";
  RunResult r = runDistlab("run " + scenario + " --out " + dir.file("out"));
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("culprits [1]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("rank 1 went non-finite first, at step 3"), std::string::npos)
      << r.output;
  const std::string stem = dir.file("out/training__non_finite_after_bit_flip");
  std::ifstream reportIn(stem + ".json");
  const nlohmann::json report = nlohmann::json::parse(reportIn);  // throws on a bare nan
  const auto& rank1 = report.at("ranks").at(1);
  EXPECT_EQ(rank1.at("non_finite").at("step"), 3);
  // Which non-finite value the overflow gives (inf, or NaN from inf - inf) is
  // not the point; that it is written as a string and never as a bare token is.
  for (int step = 3; step < 8; ++step) {
    const auto& loss = rank1.at("losses").at(step);
    EXPECT_TRUE(loss == "Infinity" || loss == "-Infinity" || loss == "NaN") << rank1;
  }
  EXPECT_TRUE(rank1.at("losses").at(2).is_number()) << rank1;
  EXPECT_FALSE(report.at("ranks").at(0).contains("non_finite"));
  std::ifstream rankIn(stem + "/rank1.json");
  const nlohmann::json rank = nlohmann::json::parse(rankIn);
  EXPECT_EQ(rank.at("non_finite_step"), 3);
  EXPECT_EQ(rank.at("non_finite_what").get<std::string>().rfind("loss = ", 0), 0u) << rank;
}

TEST(RunCommand, MissingPathIsAnError) {
  RunResult r = runDistlab("run /nonexistent/dir");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("/nonexistent/dir: no such scenario file or folder"),
            std::string::npos) << r.output;
}

}  // namespace
