// Usage errors of the real `distlab` binary: every one exits 2 with a message
// naming the flag or the input, --help exits 0 and runs nothing, and
// `distlab analyze` rejects dumps with out-of-range ranks or sequence numbers,
// naming the file; `bench collectives --debug` runs and names one series per
// debug layer.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/temp_dir.hpp"

namespace {

struct Ran {
  int exitCode = -1;
  std::string output;  // stdout and stderr
};

// Runs `distlab ARGS` through the shell, bounded by coreutils' timeout.
Ran distlab(const std::string& args) {
  const std::string cmd = "timeout -s KILL 60 " + std::string(DISTLAB_CLI_PATH) + " " + args +
                          " 2>&1";
  Ran r;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) r.output.append(buf, n);
  const int status = pclose(p);
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

void expectUsageError(const std::string& args, const std::string& message) {
  const Ran r = distlab(args);
  EXPECT_EQ(r.exitCode, 2) << "distlab " << args << "\n" << r.output;
  EXPECT_NE(r.output.find(message), std::string::npos) << "distlab " << args << "\n" << r.output;
}

TEST(CliUsage, UnknownFlagsAndMalformedValuesExitTwo) {
  expectUsageError("--no-such-flag", "--no-such-flag");
  expectUsageError("frobnicate", "frobnicate");
  expectUsageError("run --no-such-flag x.toml", "--no-such-flag");
  expectUsageError("demo --steps many", "--steps");
  expectUsageError("demo --lr 1e9", "--lr");
  expectUsageError("analyze --json", "dumps");  // missing required argument
  expectUsageError("bench collectives --iters x", "--iters");
  expectUsageError("bench collectives --world-size 2 --bogus 1", "--bogus");
  expectUsageError("launch --nproc-per-node x prog", "--nproc-per-node");
}

TEST(CliUsage, HelpExitsZeroWithoutRunning) {
  for (const std::string sub :
       {"", "run", "launch", "bench collectives", "bench scale", "analyze", "demo"}) {
    const Ran r = distlab(sub + " --help");
    EXPECT_EQ(r.exitCode, 0) << sub << "\n" << r.output;
    EXPECT_NE(r.output.find("Usage:"), std::string::npos) << sub << "\n" << r.output;
  }
  const Ran demo = distlab("demo --help");
  EXPECT_EQ(demo.output.find("step    1"), std::string::npos) << demo.output;  // did not train
}

TEST(CliUsage, BenchRejectsEmptyOpsUnknownOptionsAndUnwritableJson) {
  expectUsageError("bench collectives --ops ''", "--ops: an empty value is not allowed");
  expectUsageError("bench collectives --ops all_reduce,,broadcast",
                   "--ops 'all_reduce,,broadcast'");
  expectUsageError("bench collectives --ops allreduse", "--ops: unknown collective 'allreduse'");
  // The spellings --ops took before it used PyTorch's names get the new one.
  expectUsageError("bench collectives --ops broadcast,allgather",
                   "--ops: \"allgather\" is spelled \"all_gather_into_tensor\" (PyTorch's name)");
  expectUsageError("bench collectives --ops alltoall",
                   "--ops: \"alltoall\" is spelled \"all_to_all_single\"");
  expectUsageError("bench collectives --option shm.slot_byte=4096",
                   "--option: backend option 'shm.slot_byte' is not known");
  expectUsageError("bench collectives --option noequals", "--option 'noequals' is not key=value");
  expectUsageError("bench collectives --json /nonexistent-dir/out.json",
                   "--json /nonexistent-dir/out.json: cannot write this file");
  expectUsageError("bench collectives --max-bytes 99999999999999999999",
                   "--max-bytes '99999999999999999999' is not a byte count");
  expectUsageError("bench collectives --max-bytes 17179869184G",
                   "--max-bytes '17179869184G' is past the largest size");
  expectUsageError("bench collectives --min-bytes -8", "--min-bytes '-8' is not a byte count");
  expectUsageError("bench collectives --rounds 0", "--rounds 0 must be in 1..100");
  expectUsageError("bench collectives --rounds 101", "--rounds 101 must be in 1..100");
  expectUsageError("bench collectives --rounds two", "--rounds");
  expectUsageError("bench collectives --check 2", "--check");
  expectUsageError("bench collectives -a 4", "--average");
  expectUsageError("bench collectives --csv /nonexistent-dir/out.csv",
                   "--csv /nonexistent-dir/out.csv: cannot write this file");
  expectUsageError("bench collectives --nccl-json /nonexistent-dir/out.json",
                   "--nccl-json /nonexistent-dir/out.json: cannot write this file");
  expectUsageError("bench collectives --peer ''", "--peer: an empty value is not allowed");
  expectUsageError("bench collectives --peer openmpi", "--peer: unknown peer 'openmpi'; use mpi,torch-gloo");
  expectUsageError("bench collectives --debug ''", "--debug: an empty value is not allowed");
  expectUsageError("bench collectives --debug off,verbose",
                   "--debug 'verbose': use off, monitor or detail");
}

// One row per class of bad command line found by a fuzzing campaign. Each
// exits 2 naming the flag before any work starts (no rank is forked, no
// training step runs): the message is the proof, since the work would print
// other lines first or, for shm.slot_bytes=0, hang until the 60 s kill.
const std::vector<std::pair<std::string, std::string>> kBadCommandLines = {
    // Backend options: one validated reader, checked before the ranks start.
    {"bench collectives --ops all_reduce --max-bytes 64 --world-size 2 --option shm.slot_bytes=0",
     "--option: backend option shm.slot_bytes='0': give a whole number in [4096, 1073741824]"},
    {"bench collectives --option shm.slot_bytes=-1", "shm.slot_bytes='-1'"},
    {"bench collectives --option shm.slot_bytes=99999999999999999999", "whole number"},
    {"bench collectives --option shm.allreduce_algo=zzz", "give one of auto, direct, rsag"},
    {"bench collectives --option shm.single_copy=maybe", "give one of auto, on, off"},
    // An empty value is never the default or 0.
    {"launch --master-port '' prog", "--master-port: an empty value is not allowed"},
    {"launch --node-rank '' prog", "--node-rank: an empty value"},
    {"launch --max-restarts '' prog", "--max-restarts: an empty value"},
    {"launch --timeout '' prog", "--timeout: an empty value"},
    {"launch --stop-grace '' prog", "--stop-grace: an empty value"},
    {"launch --failure-grace '' prog", "--failure-grace: an empty value"},
    {"bench collectives --iters ''", "--iters: an empty value"},
    {"bench collectives --warmup ''", "--warmup: an empty value"},
    {"bench collectives --json ''", "--json: an empty value"},
    {"bench collectives --json=", "--json"},
    {"run --out '' x.toml", "--out: an empty value"},
    {"demo --seed ''", "--seed: an empty value"},
    {"bench overlap --gpt ''", "--gpt: an empty value"},
    {"bench overlap --json ''", "--json: an empty value"},
    // Lists: no empty item anywhere, a trailing comma included.
    {"bench collectives --ops all_reduce,", "--ops 'all_reduce,': empty item"},
    {"bench collectives --debug off,", "--debug 'off,': empty item"},
    {"bench overlap --world-sizes 2,", "--world-sizes '2,': empty item"},
    // Numbers that would wrap, flags that take no value, flags that need another.
    {"demo --seed -1", "--seed: give a whole number >= 0"},
    {"demo --seed 1e3", "--seed: give a whole number >= 0"},
    {"run --verbose=3 x.toml", "verbose was given a disallowed flag override"},
    {"run --trace x.toml", "--trace needs --out DIR"},
    // Values of work that would start first (30 s or more before failing).
    {"bench overlap --hooks bogus", "--hooks 'bogus': use none, allreduce"},
    {"bench overlap --device tpu", "--device 'tpu': use cpu or cuda"},
};

TEST(CliUsage, EveryClassOfBadCommandLineExitsTwoBeforeWork) {
  for (const auto& [args, message] : kBadCommandLines) {
    expectUsageError(args, message);
  }
}

// A short world-2 all_reduce bench (8 and 16 bytes, blocking path) with
// `flags`, and its --json report (null when the run failed).
struct SmallBench {
  Ran ran;
  nlohmann::json report;
};
SmallBench runSmallBench(const std::string& flags) {
  distlab::testing::TempDir dir;
  const std::string json = dir.file("bench.json");
  SmallBench b{distlab("bench collectives --world-size 2 --ops all_reduce --max-bytes 16 "
                       "--iters 5 --warmup 1 " + flags + " --json " + json), nullptr};
  if (b.ran.exitCode == 0) b.report = nlohmann::json::parse(std::ifstream(json));
  return b;
}

TEST(CliUsage, BenchDebugRunsOneVerifiedSeriesPerLayer) {
  const auto [r, j] = runSmallBench("--debug off,monitor,detail");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("# debug layers: monitor (flight recorder + watchdog)"),
            std::string::npos) << r.output;
  EXPECT_NE(r.output.find("time ratio shm+detail/shm"), std::string::npos) << r.output;
  EXPECT_EQ(j["debug"], nlohmann::json({"off", "monitor", "detail"}));
  std::map<std::string, int> rowsPerSeries;
  for (const auto& row : j["rows"]) {
    ++rowsPerSeries[row["backend"].get<std::string>()];
    EXPECT_EQ(row["wrong"], 0) << row.dump();
  }
  // 8 and 16 bytes, blocking path only: two rows per series.
  EXPECT_EQ(rowsPerSeries, (std::map<std::string, int>{{"shm", 2}, {"shm+detail", 2},
                                                       {"shm+monitor", 2}}));
}

TEST(CliUsage, BenchRoundsMergeEverySeriesSweptEachRound) {
  const auto [r, j] = runSmallBench("--debug off,monitor --rounds 2");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("# 2 rounds, alternating which runs first"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("(over 2 rounds)"), std::string::npos) << r.output;
  EXPECT_EQ(j["rounds"], 2);
  for (const auto& row : j["rows"]) {
    const auto rounds = row["time_p50_us_rounds"].get<std::vector<double>>();
    ASSERT_EQ(rounds.size(), 2u) << row.dump();
    EXPECT_DOUBLE_EQ(row["time_p50_us"].get<double>(), (rounds[0] + rounds[1]) / 2) << row.dump();
    EXPECT_EQ(row["wrong"], 0) << row.dump();
  }
  EXPECT_EQ(j["rows"].size(), 4u);  // 8 and 16 bytes, two series
}

TEST(CliUsage, BenchScaleRunsOnlyAsLaunchedRanksAndChecksItsFlags) {
  expectUsageError("bench scale", "bench scale runs as the ranks of a job: `distlab launch");
  expectUsageError("bench scale --iters 0", "--iters 0 / --warmup 3: need 1..100000");
  expectUsageError("bench scale --warmup -1", "--warmup -1: need 1..100000 and 0..100000");
  expectUsageError("bench scale --timeout 0", "--timeout 0 must be in 1..86400 seconds");
  expectUsageError("bench scale --timeout nan", "--timeout");
  expectUsageError("bench scale --subgroup-size 0", "--subgroup-size 0 must be at least 1");
  expectUsageError("bench scale --backend nope", "nope");
  expectUsageError("bench scale --json /nonexistent-dir/out.json",
                   "--json /nonexistent-dir/out.json");
  // Known only under the launcher: the world size the subgroups must divide.
  const Ran r = distlab("launch --nproc-per-node 4 --master-port 0 " +
                       std::string(DISTLAB_CLI_PATH) + " bench scale --subgroup-size 3");
  EXPECT_NE(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("--subgroup-size 3 does not divide the world size 4"),
            std::string::npos) << r.output;
}

// Four launched ranks: every figure present, plausible and checked; the
// subgroups and the split ran their all_reduce (correct = every sum held).
TEST(CliUsage, BenchScaleUnderLaunchReportsEveryFigure) {
  distlab::testing::TempDir dir;
  const Ran r = distlab("launch --nproc-per-node 4 --master-port 0 " +
                        std::string(DISTLAB_CLI_PATH) + " bench scale --iters 5 --warmup 1 " +
                        "--subgroup-size 2 --json " + dir.file("scale.json"));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("# sums checked: OK"), std::string::npos) << r.output;
  std::ifstream in(dir.file("scale.json"));
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["world_size"], 4);
  EXPECT_EQ(j["correct"], true);
  EXPECT_EQ(j["subgroup_size"], 2);
  // Starting ranks and forming the group take time, but not minutes.
  for (const char* key : {"spawn_s", "formed_s", "first_collective_s", "detail_group_s",
                          "new_subgroups_s", "split_half_s"}) {
    EXPECT_GE(j[key].get<double>(), 0.0) << key;
    EXPECT_LT(j[key].get<double>(), 60.0) << key;
  }
  EXPECT_LE(j["spawn_s"].get<double>(), j["formed_s"].get<double>());
  std::map<std::string, int> rows;
  for (const auto& row : j["rows"]) {
    ++rows[row["op"].get<std::string>() + "/" + row["debug"].get<std::string>()];
    EXPECT_EQ(row["iters"], 5) << row.dump();
    EXPECT_GT(row["p50_us"].get<double>(), 0.0) << row.dump();
  }
  EXPECT_EQ(rows, (std::map<std::string, int>{{"all_reduce/monitor", 2},
                                              {"all_reduce/detail", 2},
                                              {"barrier/monitor", 1},
                                              {"barrier/detail", 1},
                                              {"monitored_barrier/monitor", 1}}));
}

TEST(CliUsage, RunRejectsEmptyFoldersAndUnwritableOut) {
  distlab::testing::TempDir dir;
  std::filesystem::create_directories(dir.file("empty/sub"));
  expectUsageError("run " + dir.file("empty"),
                   dir.file("empty") + ": no scenario files (*.toml) in this folder");
  std::ofstream(dir.file("ok.toml")) << "name = \"x\"\n";
  std::ofstream(dir.file("plain")) << "a file, not a folder\n";
  expectUsageError("run " + dir.file("ok.toml") + " --out " + dir.file("plain/out"),
                   "--out " + dir.file("plain/out") + ": cannot create this folder");
}

TEST(CliUsage, LaunchTakesTheProgramAfterDashesAndRejectsUnknownFlags) {
  distlab::testing::TempDir dir;
  const std::string flags = "--nproc-per-node 2 --master-port 0 ";
  Ran r = distlab("launch " + flags + "-- /bin/sh -c 'echo rank=$RANK args=$0' -x");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("rank=0 args=-x"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("rank=1 args=-x"), std::string::npos) << r.output;
  // Without "--" the program's own flags still pass through untouched.
  r = distlab("launch " + flags + "/bin/sh -c 'echo rank=$RANK' --flag-of-the-program");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("rank=1"), std::string::npos) << r.output;
  expectUsageError("launch --nproc-per-nod 2 /bin/true", "launch: unknown flag '--nproc-per-nod'");
  expectUsageError("launch " + flags + "--", "launch: no program after '--'");
  expectUsageError("launch " + flags + "/bin/true --", "launch: unexpected '/bin/true' before '--'");
  expectUsageError("launch " + flags, "launch: no program given");
}

// A minimal valid flight-recorder dump of `rank` in a 2-rank group.
std::string dumpText(const std::string& rank, const std::string& seq, const std::string& ranks) {
  return R"({"version": "2.4-distlab", "rank": )" + rank +
         R"(, "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": )" + ranks +
         R"(}}, "pg_status": {}, "entries": [{"pg_id": "0", "collective_seq_id": )" + seq +
         R"(, "p2p_seq_id": 0, "is_p2p": false, "profiling_name": "shm:all_reduce", "op_type": "ALLREDUCE",
         "input_sizes": [[4]], "output_sizes": [[4]], "input_dtypes": ["float32"],
         "output_dtypes": ["float32"], "state": "completed"}]})";
}

TEST(CliUsage, AnalyzeRejectsOutOfRangeRanksAndSequenceNumbersNamingTheFile) {
  distlab::testing::TempDir dir;
  struct Case {
    std::string rank, seq, ranks, message;
  };
  const std::vector<Case> cases = {
      {"-1", "1", "[0, 1]", "top level: 'rank' = -1 is out of range; expected an integer in [0, "
                            "1048575]"},
      {"4294967296", "1", "[0, 1]", "top level: 'rank' = 4294967296 is out of range"},
      {"1.5", "1", "[0, 1]", "top level: 'rank' = 1.5 is out of range"},
      {"0", "-1", "[0, 1]", "entry 0: 'collective_seq_id' = -1 is out of range; expected an "
                            "integer in [0, 9007199254740992]"},
      {"0", "0", "[0, 1]", "entry 0: 'collective_seq_id' = 0 is out of range; expected an "
                           "integer in [1, 9007199254740992]"},
      {"0", "18446744073709551615", "[0, 1]",
       "entry 0: 'collective_seq_id' = 18446744073709551615 is out of range"},
      {"0", "1", "[0, -3]", "pg_config '0' (item 1): 'ranks' = -3 is out of range"},
      {"0", "1", "[0, 0]", "pg_config '0': rank 0 appears twice in 'ranks'"},
      {"2", "1", "[0, 1]", "pg_config '0': 'ranks' [0,1] does not hold the dump's own rank 2"},
  };
  const std::string good = dir.file("fr_rank_1.json");
  std::ofstream(good) << dumpText("1", "1", "[0, 1]");
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const std::string bad = dir.file("fr_bad_" + std::to_string(i) + ".json");
    std::ofstream(bad) << dumpText(c.rank, c.seq, c.ranks);
    expectUsageError("analyze " + good + " " + bad, "distlab analyze: " + bad + ": " + c.message);
  }
  std::ofstream(dir.file("fr_rank_0.json")) << dumpText("0", "1", "[0, 1]");
  const Ran ok = distlab("analyze " + dir.file("fr_rank_0.json") + " " + good);
  EXPECT_EQ(ok.exitCode, 0) << ok.output;  // the same dumps with valid numbers agree
}

}  // namespace
