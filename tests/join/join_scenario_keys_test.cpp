// The training workload's Join and ZeRO keys (overlap_with_ddp included):
// accepted values and defaults, and each misuse a "file:line: " error naming
// the key and the fix.
#include <gtest/gtest.h>

#include <string>

#include "emulator/scenario/scenario_parser.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::emulator {
namespace {

// Line numbers: header 1-3, [cluster] 4-5, [workload] 6, kind 7, engine 8,
// then `keys` from line 9.
std::string training(const std::string& keys, const std::string& engine = "ddp",
                     const std::string& expect = "") {
  return "name = \"t\"\ndescription = \"d\"\ngroup = \"g\"\n[cluster]\nworld_size = 2\n"
         "[workload]\nkind = \"training\"\nengine = \"" + engine + "\"\n" + keys +
         "[expect]\noutcome = \"success\"\n" + expect;
}

const std::string kZeroOverlap = "optimizer_sharding = \"zero\"\noverlap_with_ddp = true\n";

TEST(JoinScenarioKeys, DefaultsAndValues) {
  Scenario d = parseScenarioText(training(""), "ok.toml");
  EXPECT_FALSE(d.training.join);
  EXPECT_TRUE(d.training.divideByInitialWorldSize);
  EXPECT_EQ(d.training.optimizerSharding, "none");
  Scenario s = parseScenarioText(
      training("join = true\nthrow_on_early_termination = true\n"
               "divide_by_initial_world_size = false\noptimizer_sharding = \"zero\"\n"
               "overlap_with_ddp = false\nparameters_as_bucket_view = true\n"),
      "ok.toml");
  EXPECT_TRUE(s.training.join);
  EXPECT_TRUE(s.training.throwOnEarlyTermination);
  EXPECT_FALSE(s.training.divideByInitialWorldSize);
  EXPECT_EQ(s.training.optimizerSharding, "zero");
  EXPECT_FALSE(s.training.overlapWithDdp);
  EXPECT_TRUE(s.training.parametersAsBucketView);
}

// FSDP is a Joinable engine (runtime/fsdp/fsdp_join.hpp).
TEST(JoinScenarioKeys, FsdpUnderJoinIsAccepted) {
  Scenario s = parseScenarioText(
      training("join = true\ndivide_by_initial_world_size = false\n", "fsdp"), "ok.toml");
  EXPECT_TRUE(s.training.join);
  EXPECT_FALSE(s.training.divideByInitialWorldSize);
}

TEST(JoinScenarioKeys, OverlapWithDdpIsAccepted) {
  Scenario s = parseScenarioText(
      training(kZeroOverlap + "comm_hook = \"allreduce\"\nparameters_as_bucket_view = true\n"
               "engine_options = { find_unused_parameters = true, static_graph = true }\n",
               "ddp", "params_equal = true\nloss_decreased = true\n"),
      "ok.toml");
  EXPECT_TRUE(s.training.overlapWithDdp);
  EXPECT_TRUE(s.training.parametersAsBucketView);  // ignored at run time, with a warning
}

struct Bad {
  std::string text;
  int line;
  std::string message;
};

TEST(JoinScenarioKeys, MisuseNamesTheKey) {
  const std::vector<Bad> cases = {
      {training("join = true\n", "local"), 9, "join = true needs a Joinable engine"},
      {training("throw_on_early_termination = true\n"), 9,
       "'throw_on_early_termination' needs join = true"},
      {training("divide_by_initial_world_size = false\n"), 9,
       "'divide_by_initial_world_size' needs join = true"},
      {training("join = 1\n"), 9, "join"},
      {training("optimizer_sharding = \"zero3\"\n"), 9, "optimizer_sharding"},
      {training("optimizer_sharding = \"zero\"\n", "local"), 9,
       "optimizer_sharding = \"zero\" needs a distributed engine"},
      {training("overlap_with_ddp = true\n"), 9, "'overlap_with_ddp' needs optimizer_sharding"},
      {training("parameters_as_bucket_view = true\n"), 9,
       "'parameters_as_bucket_view' needs optimizer_sharding"},
      {training(kZeroOverlap, "fsdp"), 10, "overlap_with_ddp = true needs engine = \"ddp\""},
      {training(kZeroOverlap + "comm_hook = \"fp16_compress\"\n"), 10,
       "comm_hook must be \"none\" or \"allreduce\" (is 'fp16_compress')"},
      {training(kZeroOverlap + "join = true\n"), 10,
       "overlap_with_ddp = true cannot be combined with join = true"},
      {training(kZeroOverlap + "engine_options = { find_unused_parameters = true }\n"), 10,
       "set static_graph = true or find_unused_parameters = false"},
      {training(kZeroOverlap, "ddp", "params_match_reference = true\n"), 13,
       "params_match_reference cannot check overlap_with_ddp = true"},
      {training("optimizer_sharding = \"zero\"\noverlap_with_ddp = 1\n"), 10, "overlap_with_ddp"},
      {training("join = true\noptimizer_sharding = \"zero\"\n", "fsdp"), 10,
       "cannot be combined with engine = \"fsdp\" and join = true"},
      {training("join = true\nno_sync_every = 2\n", "fsdp"), 10,
       "no_sync_every cannot be combined with engine = \"fsdp\" and join = true"},
  };
  for (const Bad& c : cases) {
    try {
      parseScenarioText(c.text, "bad.toml");
      ADD_FAILURE() << "no error for\n" << c.text;
    } catch (const ValueError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("bad.toml:" + std::to_string(c.line) + ": ", 0), 0u) << what;
      EXPECT_NE(what.find(c.message), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace distlab::emulator
