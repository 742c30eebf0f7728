// The malformed-scenario suite: every kind of mistake is a ValueError whose
// message starts with "file:line: " (the line of the offending key or table),
// never a crash. Plus the accepted format's defaults and per-rank overrides.
#include <gtest/gtest.h>

#include <string>

#include "emulator/scenario/scenario_parser.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::emulator {
namespace {

const char* kHeader = R"(name = "t"
description = "d"
group = "g"
)";

// A valid collective scenario; tests append or replace parts of it.
std::string valid(const std::string& cluster = "[cluster]\nworld_size = 2\n",
                  const std::string& rest = "") {
  return std::string(kHeader) + cluster +
         "[workload]\nkind = \"collectives\"\n[[workload.steps]]\nop = \"all_reduce\"\n"
         "repeat = 3\n" + rest + (rest.find("[expect]") == std::string::npos
                                      ? "[expect]\noutcome = \"success\"\n" : "");
}

struct BadCase {
  const char* name;
  std::string text;
  int line;
  const char* message;
};

class MalformedScenario : public ::testing::TestWithParam<BadCase> {};

TEST_P(MalformedScenario, ReportsFileAndLine) {
  const BadCase& c = GetParam();
  try {
    parseScenarioText(c.text, "bad.toml");
    FAIL() << c.name << ": no error for\n" << c.text;
  } catch (const ValueError& e) {
    std::string what = e.what();
    std::string prefix = "bad.toml:" + std::to_string(c.line) + ": ";
    EXPECT_EQ(what.rfind(prefix, 0), 0u) << c.name << ": " << what;
    EXPECT_NE(what.find(c.message), std::string::npos) << c.name << ": " << what;
  }
}

// The test name of a BadCase: its name with every non-alphanumeric as '_'.
std::string caseName(const ::testing::TestParamInfo<BadCase>& info) {
  std::string n = info.param.name;
  for (char& c : n) if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

std::string faultAfterSteps(const std::string& fault) {
  return valid("[cluster]\nworld_size = 2\n", fault);
}

// Line numbers: header 1-3, [cluster] 4, world_size 5, [workload] 6, kind 7,
// [[workload.steps]] 8, op 9, repeat 10, then `rest` from line 11.
INSTANTIATE_TEST_SUITE_P(
    Mistakes, MalformedScenario,
    ::testing::Values(
        BadCase{"syntax", std::string(kHeader) + "[cluster\nworld_size = 2\n", 4,
                "TOML syntax error"},
        BadCase{"unknown top-level key", std::string(kHeader) + "colour = \"red\"\n", 4,
                "unknown key 'colour' in the scenario"},
        BadCase{"missing name", "description = \"d\"\ngroup = \"g\"\n", 1,
                "missing required key 'name'"},
        BadCase{"unknown cluster key", valid("[cluster]\nworld_size = 2\nnodes = 2\n"), 6,
                "unknown key 'nodes' in [cluster]"},
        BadCase{"world_size wrong type", valid("[cluster]\nworld_size = \"two\"\n"), 5,
                "'world_size' must be an integer, found a string"},
        BadCase{"world_size out of range", valid("[cluster]\nworld_size = 0\n"), 5,
                "'world_size' = 0 is out of range [1, 1024]"},
        BadCase{"world_size above the shm segment's ranks",
                valid("[cluster]\nworld_size = 1025\n"), 5,
                "'world_size' = 1025 is out of range [1, 1024]: the shm backend's segments hold at "
                "most 1024 ranks"},
        BadCase{"unknown backend", valid("[cluster]\nworld_size = 2\nbackend = \"mpi\"\n"), 6,
                "'backend' = \"mpi\" is not valid"},
        BadCase{"unknown link preset",
                valid("[cluster]\nworld_size = 2\nlink = \"carrier-pigeon\"\n"), 6,
                "unknown link preset 'carrier-pigeon'"},
        BadCase{"unknown op",
                std::string(kHeader) + "[cluster]\nworld_size = 2\n[workload]\nkind = "
                "\"collectives\"\n[[workload.steps]]\nop = \"allreduse\"\n",
                9, "'op' = \"allreduse\" is not valid"},
        BadCase{"old op spelling",
                std::string(kHeader) + "[cluster]\nworld_size = 2\n[workload]\nkind = "
                "\"collectives\"\n[[workload.steps]]\nop = \"allreduce\"\n",
                9, "op = \"allreduce\" is spelled \"all_reduce\" (PyTorch's name)"},
        BadCase{"old op spelling per rank",
                valid("[cluster]\nworld_size = 2\n",
                      "[[workload.steps]]\nop = \"broadcast\"\n[workload.steps.per_rank]\n"
                      "1 = { op = \"alltoall_single\" }\n"),
                14, "op = \"alltoall_single\" is spelled \"all_to_all_single\" (PyTorch's name)"},
        BadCase{"root outside the world",
                valid("[cluster]\nworld_size = 2\n",
                      "[[workload.steps]]\nop = \"broadcast\"\nroot = 2\n"),
                13, "'root' = 2 is out of range [0, 1]"},
        BadCase{"bad size unit",
                valid("[cluster]\nworld_size = 2\n",
                      "[[workload.steps]]\nop = \"all_reduce\"\nsize = \"3 parsecs\"\n"),
                13, "unknown size unit"},
        BadCase{"per_rank rank does not exist",
                valid("[cluster]\nworld_size = 2\n",
                      "[[workload.steps]]\nop = \"all_reduce\"\n[workload.steps.per_rank]\n"
                      "5 = { numel = 3 }\n"),
                14, "per_rank key '5' is not a rank"},
        BadCase{"fault rank >= world size",
                faultAfterSteps("[[faults]]\nkind = \"crash\"\nranks = [2]\nat_seq = 1\n"), 13,
                "rank 2 in 'ranks' does not exist: world_size is 2"},
        BadCase{"fault at a seq that never runs",
                faultAfterSteps("[[faults]]\nkind = \"hang\"\nranks = [1]\nat_seq = 4\n"), 14,
                "at_seq = 4 never runs on rank 1: it issues 3 collectives"},
        BadCase{"unknown fault kind", faultAfterSteps("[[faults]]\nkind = \"meteor\"\n"), 12,
                "'kind' = \"meteor\" is not valid"},
        BadCase{"fault key of another kind",
                faultAfterSteps("[[faults]]\nkind = \"hang\"\nranks = [1]\nat_seq = 1\n"
                                "mode = \"sigkill\"\n"),
                15, "unknown key 'mode' in [[faults]] of kind 'hang'"},
        BadCase{"fault without trigger",
                faultAfterSteps("[[faults]]\nkind = \"skip_collective\"\nranks = [1]\n"), 11,
                "needs a trigger"},
        BadCase{"engine fault on collectives",
                faultAfterSteps("[[faults]]\nkind = \"skip_backward\"\nranks = [1]\n"
                                "at_step = 0\n"),
                14, "at_step needs a training workload"},
        BadCase{"mismatch without what",
                faultAfterSteps("[[faults]]\nkind = \"mismatch\"\nranks = [1]\nat_seq = 1\n"), 11,
                "fault 'mismatch' needs mismatch ="},
        BadCase{"missing expect", std::string(kHeader) +
                "[cluster]\nworld_size = 2\n[workload]\nkind = \"collectives\"\n"
                "[[workload.steps]]\nop = \"barrier\"\n", 1,
                "missing required table [expect]"},
        BadCase{"bad outcome",
                valid("[cluster]\nworld_size = 2\n", "[expect]\noutcome = \"maybe\"\n"), 12,
                "'outcome' = \"maybe\" is not valid"},
        BadCase{"culprit rank out of range",
                valid("[cluster]\nworld_size = 2\n",
                      "[expect]\noutcome = \"error\"\nculprits = [7]\n"),
                13, "rank 7 in 'culprits' does not exist"},
        BadCase{"training check on collectives",
                valid("[cluster]\nworld_size = 2\n",
                      "[expect]\noutcome = \"success\"\nloss_decreased = true\n"),
                13, "'loss_decreased' needs a training workload"},
        BadCase{"training step that never runs",
                std::string(kHeader) + "[cluster]\nworld_size = 2\n[workload]\nkind = "
                "\"training\"\nsteps = 3\n[[faults]]\nkind = \"crash\"\nranks = [0]\n"
                "at_step = 3\n[expect]\noutcome = \"error\"\n",
                12, "at_step = 3 never runs on rank 0: it trains 3 steps"},
        BadCase{"unknown engine",
                std::string(kHeader) + "[cluster]\nworld_size = 2\n[workload]\nkind = "
                "\"training\"\nengine = \"horovod\"\n[expect]\noutcome = \"success\"\n",
                8, "unknown engine 'horovod'"},
        BadCase{"unknown engine option",
                std::string(kHeader) + "[cluster]\nworld_size = 1\n[workload]\nkind = "
                "\"training\"\nengine = \"local\"\n[workload.engine_options]\nturbo = true\n"
                "[expect]\noutcome = \"success\"\n",
                10, "unknown key 'turbo' in engine_options of engine 'local'"}),
    caseName);

// A GPT training scenario. Lines: header 1-3, [cluster] 4, world_size 5,
// [workload] 6, kind 7, model 8, `workload` from line 9, then `rest`.
std::string gptScenario(const std::string& workload, const std::string& rest = "",
                        const std::string& model = "gpt") {
  return std::string(kHeader) + "[cluster]\nworld_size = 2\n[workload]\nkind = \"training\"\n"
         "model = \"" + model + "\"\n" + workload + rest + "[expect]\noutcome = \"success\"\n";
}

INSTANTIATE_TEST_SUITE_P(
    GptMistakes, MalformedScenario,
    ::testing::Values(
        BadCase{"gpt embd not a multiple of heads",
                gptScenario("gpt = { embd = 30, heads = 4 }\n"), 9,
                "gpt: embd = 30 must be a multiple of heads = 4"},
        BadCase{"gpt vocab too small", gptScenario("[workload.gpt]\nlayers = 2\nvocab = 1\n"),
                11, "'vocab' = 1 is out of range [2, 65536]"},
        BadCase{"gpt block too long", gptScenario("gpt = { block = 5000 }\n"), 9,
                "'block' = 5000 is out of range [1, 4096]"},
        BadCase{"gpt no layers", gptScenario("[workload.gpt]\nlayers = 0\n"), 10,
                "'layers' = 0 is out of range [1, 64]"},
        BadCase{"gpt zero heads", gptScenario("gpt = { heads = 0 }\n"), 9,
                "'heads' = 0 is out of range [1, 256]"},
        BadCase{"gpt tied not a boolean", gptScenario("gpt = { tied = 1 }\n"), 9,
                "'tied' must be true or false, found an integer"},
        BadCase{"gpt unknown key", gptScenario("gpt = { vocab = 8, width = 3 }\n"), 9,
                "unknown key 'width' in gpt"},
        BadCase{"gpt table without model gpt",
                gptScenario("sizes = [4, 4]\ngpt = { vocab = 8 }\n", "", "mlp"), 10,
                "'gpt' needs model = \"gpt\" (model is 'mlp')"},
        BadCase{"sizes with model gpt", gptScenario("sizes = [4, 8, 4]\n"), 9,
                "'sizes' does not apply to model = \"gpt\""},
        BadCase{"unused_param fault on gpt",
                gptScenario("steps = 3\n", "[[faults]]\nkind = \"unused_param\"\nranks = [1]\n"),
                10, "model = \"gpt\" has none"},
        BadCase{"unused_param parameter on a training workload",
                gptScenario("sizes = [4, 4]\n",
                            "[[faults]]\nkind = \"unused_param\"\nranks = [1]\nparameter = \"x\"\n",
                            "mlp"),
                13, "parameter names one of a program's parameters"}),
    caseName);

// layer_compute (Note [Emulated layer compute]): finite times in [0, 60000]
// ms, at least one above 0, no other key. An mlp scenario through gptScenario.
INSTANTIATE_TEST_SUITE_P(
    LayerComputeMistakes, MalformedScenario,
    ::testing::Values(
        BadCase{"layer_compute negative",
                gptScenario("layer_compute = { forward_ms = -1 }\n", "", "mlp"), 9,
                "'forward_ms' = -1 is out of range; allowed: [0, 60000] ms"},
        BadCase{"layer_compute nan",
                gptScenario("layer_compute = { backward_ms = nan }\n", "", "mlp"), 9,
                "'backward_ms'"},
        BadCase{"layer_compute too long",
                gptScenario("layer_compute = { backward_ms = 1e9 }\n", "", "mlp"), 9,
                "out of range; allowed: [0, 60000] ms"},
        BadCase{"layer_compute both zero",
                gptScenario("layer_compute = { forward_ms = 0, backward_ms = 0 }\n", "", "mlp"),
                9, "layer_compute needs forward_ms or backward_ms above 0"},
        BadCase{"layer_compute unknown key",
                gptScenario("layer_compute = { forward_ms = 1, optimizer_ms = 2 }\n", "",
                            "mlp"),
                9, "unknown key 'optimizer_ms' in layer_compute"},
        BadCase{"layer_compute not a table",
                gptScenario("layer_compute = 3\n", "", "mlp"), 9, "layer_compute"}),
    caseName);

// Classes of bad input a fuzzing campaign found accepted: a rank key with a
// leading zero (a second spelling of a rank, so one value was dropped), a
// string where the format wants an array, control characters in the header.
INSTANTIATE_TEST_SUITE_P(
    InputClasses, MalformedScenario,
    ::testing::Values(
        BadCase{"per_rank key with a leading zero",
                valid("[cluster]\nworld_size = 2\n",
                      "[workload.steps.per_rank.01]\nsize = 8\n"),
                11, "per_rank key '01': write the rank without leading zeros ('1')"},
        BadCase{"expect rank key with a leading zero",
                valid("[cluster]\nworld_size = 2\n",
                      "[expect]\noutcome = \"success\"\n[expect.rank.00]\nstatus = \"ok\"\n"),
                13, "'00': write the rank without leading zeros ('0')"},
        BadCase{"diagnosis as a string",
                valid("[cluster]\nworld_size = 2\n",
                      "[expect]\noutcome = \"success\"\ndiagnosis = \"x\"\n"),
                13, "'diagnosis' must be an array of strings"},
        BadCase{"escape sequence in the name",
                "name = \"t\\u001b[2J\"\ndescription = \"d\"\ngroup = \"g\"\n", 1,
                "'name' holds a control character (code 27)"},
        BadCase{"newline in the group", "name = \"t\"\ndescription = \"d\"\ngroup = \"g\\n\"\n", 3,
                "'group' holds a control character (code 10)"}),
    caseName);

// The network model in [cluster] (topology, collective_algorithm) and the
// collective script's async / wait / iterations.
std::string withIterations(const std::string& value) {
  return std::string(kHeader) + "[cluster]\nworld_size = 2\n[workload]\nkind = \"collectives\"\n" +
         "iterations = " + value + "\n[[workload.steps]]\nop = \"all_reduce\"\n" +
         "[expect]\noutcome = \"success\"\n";
}

INSTANTIATE_TEST_SUITE_P(
    NetworkModelAndAsync, MalformedScenario,
    ::testing::Values(
        BadCase{"unknown topology",
                valid("[cluster]\nworld_size = 2\ntopology = \"dgx-a100\"\n"), 6,
                "topology 'dgx-a100': unknown preset"},
        BadCase{"topology with a bad link",
                valid("[cluster]\nworld_size = 2\ntopology = \"ranks_per_node=2,intra=1:nan,"
                      "inter=pcie\"\n"),
                6, "intra bandwidth='nan'"},
        BadCase{"link and topology",
                valid("[cluster]\nworld_size = 2\nlink = \"nvlink\"\ntopology = \"dgx-h100\"\n"), 7,
                "give 'link' (one flat link) or 'topology'"},
        BadCase{"algorithm without topology",
                valid("[cluster]\nworld_size = 2\ncollective_algorithm = \"ring\"\n"), 6,
                "'collective_algorithm' needs a 'topology'"},
        BadCase{"unknown algorithm",
                valid("[cluster]\nworld_size = 2\ntopology = \"dgx-h100\"\n"
                      "collective_algorithm = \"butterfly\"\n"),
                7, "unknown collective algorithm 'butterfly'"},
        BadCase{"async compute",
                valid("[cluster]\nworld_size = 2\n",
                      "[[workload.steps]]\nop = \"compute\"\ncompute_ms = 1\nasync = true\n"),
                11, "'async' does not apply to op = \"compute\""},
        BadCase{"zero iterations", withIterations("0"), 8,
                "'iterations' = 0 is out of range [1, 100000]"},
        BadCase{"predicted without a world",
                valid("[cluster]\nworld_size = 2\ntopology = \"dgx-h100\"\n",
                      "[expect]\noutcome = \"success\"\n[expect.predicted]\n"
                      "step_time_max = 1\n"),
                14, "[expect.predicted] needs 'world'"},
        BadCase{"predicted without a topology",
                valid("[cluster]\nworld_size = 2\n",
                      "[expect]\noutcome = \"success\"\n[expect.predicted]\nworld = 64\n"
                      "step_time_max = 1\n"),
                13, "needs a 'topology' (or one in [cluster])"},
        BadCase{"predicted without a bound",
                valid("[cluster]\nworld_size = 2\n",
                      "[expect]\noutcome = \"success\"\n[expect.predicted]\nworld = 64\n"
                      "topology = \"dgx-h100\"\n"),
                13, "needs step_time_max or exposed_share_max"},
        BadCase{"predicted bound not finite",
                valid("[cluster]\nworld_size = 2\n",
                      "[expect]\noutcome = \"success\"\n[expect.predicted]\nworld = 64\n"
                      "topology = \"dgx-h100\"\nstep_time_max = nan\n"),
                16, "step_time_max"},
        BadCase{"predicted world zero",
                valid("[cluster]\nworld_size = 2\n",
                      "[expect]\noutcome = \"success\"\n[expect.predicted]\nworld = 0\n"
                      "topology = \"dgx-h100\"\nstep_time_max = 1\n"),
                14, "'world' = 0 is out of range"}),
    caseName);

TEST(ScenarioParser, ReadsTheNetworkModelAndTheAsyncScript) {
  const Scenario s = parseScenarioText(
      std::string(kHeader) +
          "[cluster]\nworld_size = 4\ntopology = \"ranks_per_node=2,intra=1:10,inter=5:1\"\n"
          "collective_algorithm = \"ring\"\n[workload]\nkind = \"collectives\"\n"
          "iterations = 3\n[[workload.steps]]\nop = \"all_reduce\"\nasync = true\n"
          "[[workload.steps]]\nop = \"compute\"\ncompute_ms = 2\n"
          "[[workload.steps]]\nop = \"wait\"\n[expect]\noutcome = \"success\"\n",
      "ok.toml");
  ASSERT_TRUE(s.network.has_value());
  EXPECT_EQ(s.network->topology.ranksPerNode, 2);
  EXPECT_EQ(s.network->algorithm, CollectiveAlgorithm::kRing);
  EXPECT_FALSE(s.link.enabled());
  EXPECT_EQ(s.iterations, 3);
  ASSERT_EQ(s.steps.size(), 3u);
  EXPECT_TRUE(s.steps[0].async);
  EXPECT_EQ(s.steps[2].op, "wait");
}

TEST(ScenarioParser, ReadsTheGptShape) {
  Scenario s = parseScenarioText(
      gptScenario("gpt = { vocab = 50, block = 12, embd = 24, heads = 3, layers = 5, "
                  "tied = true }\nengine = \"ddp\"\n"),
      "ok.toml");
  EXPECT_EQ(s.training.model, "gpt");
  EXPECT_EQ(s.training.gpt.vocab, 50);
  EXPECT_EQ(s.training.gpt.block, 12);
  EXPECT_EQ(s.training.gpt.embd, 24);
  EXPECT_EQ(s.training.gpt.heads, 3);
  EXPECT_EQ(s.training.gpt.layers, 5);
  EXPECT_TRUE(s.training.gpt.tied);
  Scenario d = parseScenarioText(gptScenario(""), "ok.toml");  // no table: the defaults
  EXPECT_EQ(d.training.gpt.vocab, GptWorkload{}.vocab);
  EXPECT_EQ(d.training.gpt.layers, GptWorkload{}.layers);
  EXPECT_FALSE(d.training.gpt.tied);
}

TEST(ScenarioParser, ReadsLayerCompute) {
  Scenario s = parseScenarioText(
      gptScenario("layer_compute = { forward_ms = 1.5, backward_ms = 3 }\n", "", "mlp"),
      "ok.toml");
  EXPECT_DOUBLE_EQ(s.training.layerCompute.forwardMs, 1.5);
  EXPECT_DOUBLE_EQ(s.training.layerCompute.backwardMs, 3);
  Scenario none = parseScenarioText(gptScenario("", "", "mlp"), "ok.toml");
  EXPECT_FALSE(none.training.layerCompute.any());
}

TEST(ScenarioParser, ReadsDefaultsAndPerRankOverrides) {
  Scenario s = parseScenarioText(
      valid("[cluster]\nworld_size = 3\nlink = \"ethernet-10g\"\n",
            "[[workload.steps]]\nop = \"all_reduce\"\nsize = \"4KiB\"\n"
            "[workload.steps.per_rank.1]\nsize = \"8KiB\"\n"),
      "ok.toml");
  EXPECT_EQ(s.worldSize, 3);
  EXPECT_EQ(s.backend, "shm");
  EXPECT_EQ(s.link.preset, "ethernet-10g");
  ASSERT_EQ(s.steps.size(), 2u);
  EXPECT_EQ(s.steps[0].repeat, 3);
  EXPECT_EQ(s.steps[1].numel, 1024);                 // 4 KiB of float32
  EXPECT_EQ(s.steps[1].forRank(0).numel, 1024);
  EXPECT_EQ(s.steps[1].forRank(1).numel, 2048);
  EXPECT_EQ(s.steps[1].pos.line, 12);
  EXPECT_EQ(worldCollectiveCount(s, 0), 4u);
  EXPECT_EQ(s.expect.outcome, Outcome::kSuccess);
}

TEST(ScenarioParser, StepLimitedToSomeRanksCountsOnlyThere) {
  Scenario s = parseScenarioText(
      valid("[cluster]\nworld_size = 2\n", "[[workload.steps]]\nop = \"barrier\"\nranks = [0]\n"),
      "ok.toml");
  EXPECT_EQ(worldCollectiveCount(s, 0), 4u);
  EXPECT_EQ(worldCollectiveCount(s, 1), 3u);
}

TEST(ScenarioParser, MissingFileNamesThePath) {
  try {
    parseScenarioFile("/nonexistent/x.toml");
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()), "/nonexistent/x.toml: cannot open scenario file");
  }
}

}  // namespace
}  // namespace distlab::emulator
