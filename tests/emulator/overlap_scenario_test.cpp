// Overlap expectations end to end through `distlab run`: the ranks trace, the
// runner merges the traces (one process per rank, clocks aligned), reports the
// metrics, and fails a scenario whose overlap is below its bound; misplaced
// keys are file:line errors. Also `distlab bench overlap` on one small
// configuration and its usage errors.
#include <gtest/gtest.h>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "emulator/trace/trace_merge.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using RunResult = distlab::testing::CommandOutput;

RunResult runDistlab(const std::string& args) {
  return distlab::testing::runCommandLine(std::string(DISTLAB_CLI_PATH) + " " + args);
}

// One bucket, launched from the last layer's backward: nothing overlaps, and
// no launch has backward compute still to come.
std::string singleBucket(const std::string& expectations) {
  return R"(name = "one_bucket"
description = "one bucket over a slow link"
group = "test"
[cluster]
world_size = 2
link = "ethernet-1g"
timeout = 30
[workload]
kind = "training"
model = "mlp"
sizes = [64, 1024, 16]
engine = "ddp"
engine_options = { bucket_cap_mb = 1024 }
steps = 3
batch_size = 8
[expect]
outcome = "success"
)" + expectations;
}

TEST(OverlapScenario, LowOverlapFailsAndTheTraceIsMerged) {
  distlab::testing::TempDir dir;
  std::ofstream(dir.file("one.toml"))
      << singleBucket("overlap_ratio_min = 0.5\nlaunches_in_backward_min = 2\n");
  RunResult r = runDistlab("run " + dir.file("one.toml") + " --out " + dir.file("out"));
  // The launch structure fails on every machine (one bucket, launched last).
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("below launches_in_backward_min = 2"), std::string::npos) << r.output;
  std::ifstream report(dir.file("out/test__one.json"));
  auto j = nlohmann::json::parse(report);
  ASSERT_EQ(j["overlap"].size(), 2u) << j.dump();
  // The overlap ratio is a timing: a rank descheduled inside its last backward
  // span counts the allreduce as overlapped. Normally well under 0.5; the verdict
  // must match the figures the run reports, over all ranks.
  double comm = 0, exposed = 0;
  for (const auto& rank : j["overlap"]) {
    comm += rank["comm_ms"].get<double>();
    exposed += rank["exposed_comm_ms"].get<double>();
  }
  const bool below = comm > 0 && 1 - exposed / comm < 0.5;
  EXPECT_EQ(r.output.find("below overlap_ratio_min = 0.5") != std::string::npos, below)
      << "overlap over all ranks " << 1 - exposed / comm << "\n" << r.output;
  for (const auto& rank : j["overlap"]) {
    // Per rank a timing, and one loaded step can go either way (a rank measured
    // 1.0 once with both cores busy); the verdict above is over all ranks.
    EXPECT_GE(rank["overlap_ratio"].get<double>(), 0.0);
    EXPECT_LE(rank["overlap_ratio"].get<double>(), 1.0);
    // 330 KB at 0.125 GB/s is 2.7 ms from the issue, but the comm span begins when the
    // operation starts running, which a loaded machine can delay past most of that
    // (measured 0.47 ms once with both cores busy): only its presence is certain.
    EXPECT_GT(rank["comm_ms"].get<double>(), 0.0);
    EXPECT_EQ(rank["steps"], 1);  // 3 steps, 2 of warm-up
    EXPECT_LE(rank["min_launches_in_backward"].get<int>(), 1);
    EXPECT_EQ(rank["max_waits_in_backward"], 0);
  }
  std::ifstream traceFile(dir.file("out/test__one.trace.json"));
  auto trace = nlohmann::json::parse(traceFile);
  std::set<int> pids;
  for (const auto& e : trace["traceEvents"]) pids.insert(e["pid"].get<int>());
  EXPECT_EQ(pids, (std::set<int>{0, 1}));
  EXPECT_EQ(trace["otherData"]["clocks"].size(), 2u);
  for (const auto& c : trace["otherData"]["clocks"]) {
    EXPECT_LE(std::llabs(c["offset_ns"].get<int64_t>()), c["bound_ns"].get<int64_t>());
  }
  auto problems = distlab::emulator::nestingProblems(trace);
  EXPECT_TRUE(problems.empty()) << problems.front();
}

TEST(OverlapScenario, ExpectationsNeedASuccessfulTrainingRun) {
  distlab::testing::TempDir dir;
  std::string text = singleBucket("exposed_comm_max = 1.5\n");
  std::ofstream(dir.file("range.toml")) << text;
  RunResult r = runDistlab("run " + dir.file("range.toml"));
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("range.toml:18:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("exposed_comm_max"), std::string::npos) << r.output;
  std::ofstream(dir.file("coll.toml")) << R"(name = "c"
description = "collectives"
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
overlap_ratio_min = 0.5
)";
  r = runDistlab("run " + dir.file("coll.toml"));
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("coll.toml:13: 'overlap_ratio_min' needs a training workload"),
            std::string::npos) << r.output;
}

TEST(OverlapScenario, StepTimeRatioAgainstASecondConfiguration) {
  distlab::testing::TempDir dir;
  // Any real step takes longer than 1% of another: the bound must fail, naming both times.
  std::ofstream(dir.file("ratio.toml"))
      << singleBucket("[expect.step_time_ratio]\ncomm_hook = \"noop\"\nmin = 100\n");
  RunResult r = runDistlab("run " + dir.file("ratio.toml"));
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("is below step_time_ratio.min = 100"), std::string::npos) << r.output;
  std::ofstream(dir.file("empty.toml")) << singleBucket("[expect.step_time_ratio]\nmax = 2\n");
  r = runDistlab("run " + dir.file("empty.toml"));
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("needs engine_options and/or comm_hook"), std::string::npos)
      << r.output;
}

TEST(OverlapBench, OneConfigurationAndUsageErrors) {
  distlab::testing::TempDir dir;
  RunResult r = runDistlab(
      "bench overlap --world-sizes 2 --links ethernet-1g --caps 25 --hooks '' --sizes 32,64,8 "
      "--steps 3 --batch-size 4 --no-tracing-overhead --fsdp block --rounds 2 --json " +
      dir.file("o.json"));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  // Two rounds of the two configurations, interleaved.
  EXPECT_NE(r.output.find("[3/4] world 2, ethernet-1g, bucket_cap_mb 25, hook none"),
            std::string::npos) << r.output;
  std::ifstream in(dir.file("o.json"));
  auto j = nlohmann::json::parse(in);
  ASSERT_EQ(j["rows"].size(), 2u);
  EXPECT_EQ(j["rounds"], 2);
  EXPECT_EQ(j["rows"][0]["rounds_ok"], 2);
  EXPECT_EQ(j["links"]["ethernet-1g"]["bandwidth_gbs"], 0.125);  // for a peer to model it
  EXPECT_EQ(j["rows"][0]["error"], "");
  EXPECT_GT(j["rows"][0]["comm_ms"].get<double>(), 0);
  EXPECT_GT(j["rows"][0]["backward_ms"].get<double>(), 0);
  EXPECT_LE(j["rows"][0]["backward_ms"].get<double>(), j["rows"][0]["compute_ms"].get<double>());
  EXPECT_DOUBLE_EQ(j["rows"][0]["vs_default"].get<double>(), 1.0);
  EXPECT_EQ(j["rows"][1]["hook"], "fsdp:block");  // the FSDP row: all-gathers, reduce-scatters
  EXPECT_EQ(j["rows"][1]["error"], "");
  EXPECT_GT(j["rows"][1]["comm_ms"].get<double>(), 0);
  EXPECT_GT(j["rows"][1]["vs_default"].get<double>(), 0);
  for (const char* bad : {"--links nowhere", "--world-sizes 2,x", "--steps 2", "--caps 0",
                          "--fsdp bogus", "--rounds 0"}) {
    RunResult u = runDistlab(std::string("bench overlap ") + bad);
    EXPECT_EQ(u.exitCode, 2) << bad << ": " << u.output;
  }
}

// --model gpt: the scenario engine trains a GPT; every row (DDP, the noop
// hook, FSDP per block) runs and records steps.
TEST(OverlapBench, GptRows) {
  distlab::testing::TempDir dir;
  RunResult r = runDistlab(
      "bench overlap --model gpt --gpt 32,8,32,2,2 --world-sizes 2 --links ethernet-1g "
      "--caps 25 --hooks noop --fsdp block --steps 3 --batch-size 2 --no-tracing-overhead "
      "--json " + dir.file("g.json"));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("model gpt [32, 8, 32, 2, 2]"), std::string::npos) << r.output;
  std::ifstream in(dir.file("g.json"));
  auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["model"], "gpt");
  EXPECT_EQ(j["gpt"]["embd"], 32);
  EXPECT_EQ(j["gpt"]["layers"], 2);
  ASSERT_EQ(j["rows"].size(), 3u) << j.dump();
  const char* hooks[] = {"none", "noop", "fsdp:block"};
  for (size_t i = 0; i < 3; ++i) {
    const auto& row = j["rows"][i];
    EXPECT_EQ(row["hook"], hooks[i]);
    EXPECT_EQ(row["error"], "") << row.dump();
    EXPECT_GT(row["step_ms"].get<double>(), 0) << row.dump();
    EXPECT_GT(row["compute_ms"].get<double>(), 0) << row.dump();
  }
  EXPECT_GT(j["rows"][0]["comm_ms"].get<double>(), 0);  // DDP's allreduce
  EXPECT_GT(j["rows"][2]["comm_ms"].get<double>(), 0);  // FSDP's all-gathers, reduce-scatters
  for (const char* bad : {"--model transformer", "--gpt 32,8,32,2,2", "--model gpt --gpt 32,8,32",
                          "--model gpt --gpt 32,8,30,4,2", "--model gpt --gpt 1,8,32,2,2",
                          "--model gpt --gpt 32,8,32,2,0"}) {
    RunResult u = runDistlab(std::string("bench overlap ") + bad);
    EXPECT_EQ(u.exitCode, 2) << bad << ": " << u.output;
  }
}

}  // namespace
