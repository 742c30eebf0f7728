// The training workload's overlap_with_ddp key: accepted with ZeRO on the DDP
// engine, and each misuse a "file:line: " error naming the key and the fix.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "emulator/scenario/scenario_parser.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::emulator {
namespace {

// Line numbers: header 1-3, [cluster] 4-5, [workload] 6, kind 7, engine 8,
// then `keys` from line 9.
std::string training(const std::string& keys, const std::string& expect = "",
                     const std::string& engine = "ddp") {
  return "name = \"t\"\ndescription = \"d\"\ngroup = \"g\"\n[cluster]\nworld_size = 2\n"
         "[workload]\nkind = \"training\"\nengine = \"" + engine + "\"\n" + keys +
         "[expect]\noutcome = \"success\"\n" + expect;
}

const std::string kZeroOverlap = "optimizer_sharding = \"zero\"\noverlap_with_ddp = true\n";

TEST(ZeroScenarioKeys, OverlapWithDdpIsAccepted) {
  Scenario s = parseScenarioText(
      training(kZeroOverlap + "comm_hook = \"allreduce\"\nparameters_as_bucket_view = true\n"
               "engine_options = { find_unused_parameters = true, static_graph = true }\n",
               "params_equal = true\nloss_decreased = true\n"),
      "ok.toml");
  EXPECT_TRUE(s.training.overlapWithDdp);
  EXPECT_TRUE(s.training.parametersAsBucketView);  // ignored at run time, with a warning
  EXPECT_EQ(s.training.optimizerSharding, "zero");
}

struct Bad {
  std::string text;
  int line;
  std::string message;
};

TEST(ZeroScenarioKeys, OverlapMisuseNamesTheKey) {
  const std::vector<Bad> cases = {
      {training(kZeroOverlap, "", "fsdp"), 10, "overlap_with_ddp = true needs engine = \"ddp\""},
      {training(kZeroOverlap + "comm_hook = \"fp16_compress\"\n"), 10,
       "comm_hook must be \"none\" or \"allreduce\" (is 'fp16_compress')"},
      {training(kZeroOverlap + "join = true\n"), 10,
       "overlap_with_ddp = true cannot be combined with join = true"},
      {training(kZeroOverlap + "engine_options = { find_unused_parameters = true }\n"), 10,
       "set static_graph = true or find_unused_parameters = false"},
      {training(kZeroOverlap, "params_match_reference = true\n"), 13,
       "params_match_reference cannot check overlap_with_ddp = true"},
      {training("optimizer_sharding = \"zero\"\noverlap_with_ddp = 1\n"), 10, "overlap_with_ddp"},
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
