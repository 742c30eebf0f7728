// `distlab predict` as a user runs it: the sample trace predicted at world 4
// gives the hand-worked step time; bad input (a truncated trace, a world size
// of 0, an unknown preset or algorithm, a missing file) exits 2 naming it.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/predict/sample_trace.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using Ran = distlab::testing::CommandOutput;

// `distlab ARGS`, bounded by coreutils' timeout.
Ran distlab(const std::string& args) {
  return distlab::testing::runCommandLine("timeout -s KILL 60 " + std::string(DISTLAB_CLI_PATH) +
                                          " " + args);
}

class PredictCli : public ::testing::Test {
 protected:
  void SetUp() override {
    trace_ = dir_.file("run.trace.json");
    std::ofstream(trace_) << distlab::testing::sampleTrace().dump();
  }
  void expectUsageError(const std::string& args, const std::string& message) {
    const Ran r = distlab("predict " + args);
    EXPECT_EQ(r.exitCode, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << args << "\n" << r.output;
  }
  distlab::testing::TempDir dir_;
  std::string trace_;
};

TEST_F(PredictCli, PredictsTheHandWorkedStepAndWritesJsonAndTimeline) {
  const std::string json = dir_.file("p.json"), timeline = dir_.file("t.json");
  const Ran r = distlab("predict " + trace_ + " --world 4,8 --topology " +
                        distlab::testing::kSampleTopology + " --json " + json + " --timeline " +
                        timeline);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("traced at world 2"), std::string::npos) << r.output;
  std::ifstream in(json);
  const nlohmann::json j = nlohmann::json::parse(in);
  ASSERT_EQ(j["rows"].size(), 2u);
  EXPECT_EQ(j["rows"][0]["world_size"], 4);
  EXPECT_NEAR(j["rows"][0]["step_s"].get<double>(), distlab::testing::kSampleStepAtWorld4S, 1e-9);
  EXPECT_NEAR(j["rows"][0]["compute_s"].get<double>(), 9e-3, 1e-9);
  EXPECT_NEAR(j["rows"][0]["exposed_s"].get<double>(), 5.5e-3, 1e-9);
  EXPECT_EQ(j["rows"][0]["collectives"].size(), 2u);
  // World 8: the all_reduce costs 2(7/8) 4 MB = 7 ms, the all-gather 1.75 ms.
  EXPECT_NEAR(j["rows"][1]["step_s"].get<double>(), 9e-3 + 6e-3 + 0.75e-3, 1e-9);
  std::ifstream tl(timeline);
  const nlohmann::json t = nlohmann::json::parse(tl);
  EXPECT_FALSE(t["traceEvents"].empty());
}

TEST_F(PredictCli, BadInputExitsTwoNamingIt) {
  const std::string text = distlab::testing::sampleTrace().dump();
  const std::string truncated = dir_.file("truncated.json");
  std::ofstream(truncated) << text.substr(0, text.size() / 2);
  expectUsageError(truncated + " --world 4", "predict:");
  expectUsageError(truncated + " --world 4", truncated);
  expectUsageError(dir_.file("missing.json") + " --world 4", "missing.json");
  expectUsageError(trace_ + " --world 0", "--world '0': '0' is not a whole number");
  expectUsageError(trace_ + " --world 4,,8", "--world");
  expectUsageError(trace_ + " --world -3", "--world");
  expectUsageError(trace_ + " --world 65537", "is not a whole number in [1, 65536]");
  // Valid JSON of the wrong shape: a size that is not a number.
  nlohmann::json wrongType = distlab::testing::sampleTrace();
  for (auto& e : wrongType["traceEvents"]) {
    if (e.value("ph", "") == "b") e["args"]["bytes"] = "many";
  }
  const std::string typed = dir_.file("typed.json");
  std::ofstream(typed) << wrongType.dump();
  expectUsageError(typed + " --world 4", typed);
  expectUsageError(trace_ + " --world 4 --topology dgx-a100", "topology 'dgx-a100': unknown");
  expectUsageError(trace_ + " --world 4 --algorithm butterfly", "unknown collective algorithm");
  expectUsageError(trace_ + " --world 4 --json /nonexistent-dir/p.json", "--json");
  expectUsageError(trace_, "--world");
}

}  // namespace
