// Bad numbers in scenario files (Note [Validated numbers] in toml_reader.hpp):
// for every number the parser reads, NaN, +inf and -inf are a file:line error
// naming the key and its allowed range; sizes that overflow, would wrap to 0
// or negative, are negative, or pass the element limit are errors; rank keys
// must be plain decimal ranks ("1abc" is not rank 1). Each case asserts the
// whole message.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "emulator/scenario/scenario_parser.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::emulator {
namespace {

const std::string kHeader = "name = \"t\"\ndescription = \"d\"\ngroup = \"g\"\n";
const std::string kCluster = "[cluster]\nworld_size = 2\n";
const std::string kSteps =
    "[workload]\nkind = \"collectives\"\n[[workload.steps]]\nop = \"all_reduce\"\nrepeat = 3\n";
const std::string kSuccess = "[expect]\noutcome = \"success\"\n";

// The error for `text` with every '@' replaced by `value`; the expected line
// is the line of the first '@'.
std::string errorFor(std::string text, const std::string& value, int* line) {
  *line = 1;
  for (size_t i = 0; i < text.find('@'); ++i) *line += text[i] == '\n';
  for (size_t at; (at = text.find('@')) != std::string::npos;) text.replace(at, 1, value);
  try {
    parseScenarioText(text, "bad.toml");
  } catch (const ValueError& e) {
    return e.what();
  }
  return "no error for:\n" + text;
}

void expectError(const std::string& text, const std::string& value, const std::string& message) {
  int line = 0;
  const std::string what = errorFor(text, value, &line);
  EXPECT_EQ(what, "bad.toml:" + std::to_string(line) + ": " + message) << text;
}

struct NumberKey {
  const char* key;
  std::string text;  // a scenario with '@' where the value goes
  const char* range;
};

std::vector<NumberKey> numberKeys() {
  const std::string training = kHeader + kCluster + "[workload]\nkind = \"training\"\n";
  return {
      {"timeout", kHeader + kCluster + "timeout = @\n" + kSteps + kSuccess, "(0, 600] s"},
      {"run_timeout", kHeader + kCluster + "run_timeout = @\n" + kSteps + kSuccess, "(0, 600] s"},
      {"teardown_grace", kHeader + kCluster + "teardown_grace = @\n" + kSteps + kSuccess,
       "[0, 60] s"},
      {"latency_us",
       kHeader + kCluster + "[cluster.link]\nlatency_us = @\nbandwidth_gbs = 10\n" + kSteps +
           kSuccess,
       "[0, 1000000] us"},
      {"bandwidth_gbs",
       kHeader + kCluster + "[cluster.link]\nlatency_us = 5\nbandwidth_gbs = @\n" + kSteps +
           kSuccess,
       "[0, 10000] GB/s"},
      {"compute_ms",
       kHeader + kCluster + kSteps + "[[workload.steps]]\nop = \"compute\"\ncompute_ms = @\n" +
           kSuccess,
       "[0, 60000] ms"},
      {"lr", training + "lr = @\n" + kSuccess, "(0, 10]"},
      {"bucket_cap_mb",
       training + "engine = \"ddp\"\n[workload.engine_options]\nbucket_cap_mb = @\n" + kSuccess,
       "[0, 1048576]"},
      {"duration",
       kHeader + kCluster + kSteps +
           "[[faults]]\nkind = \"hang\"\nranks = [1]\nat_seq = 1\nduration = @\n" +
           "[expect]\noutcome = \"timeout\"\n",
       "(0, 3600] s (omit: forever)"},
      {"delay_ms",
       kHeader + kCluster + kSteps +
           "[[faults]]\nkind = \"straggler\"\nranks = [1]\nat_seq = 1\ndelay_ms = @\n" + kSuccess,
       "(0, 600000] ms"},
      {"detect_within",
       kHeader + kCluster + kSteps + "[[faults]]\nkind = \"crash\"\nranks = [1]\nat_seq = 1\n" +
           "[expect]\noutcome = \"error\"\ndetect_within = @\n",
       "(0, 600] s"},
  };
}

TEST(ScenarioNumbers, NonFiniteValueOfEveryKeyIsAFileLineError) {
  for (const NumberKey& k : numberKeys()) {
    for (const char* value : {"nan", "+nan", "inf", "-inf"}) {
      const std::string shown = std::string(value) == "+nan" ? "nan" : value;
      expectError(k.text, value,
                  fmt::format("'{}' = {} is not a finite number; allowed: {}", k.key, shown,
                              k.range));
    }
  }
}

TEST(ScenarioNumbers, EveryKeyAcceptsAValueInsideItsRange) {
  for (const NumberKey& k : numberKeys()) {
    int line = 0;
    const std::string what = errorFor(k.text, "1", &line);
    EXPECT_EQ(what.find("no error for"), 0u) << k.key << ": " << what;
  }
}

TEST(ScenarioNumbers, ValuesOutsideTheRangeNameTheRange) {
  const auto keys = numberKeys();
  expectError(keys[0].text, "0", "'timeout' = 0 is out of range; allowed: (0, 600] s");
  expectError(keys[0].text, "1e300", "'timeout' = 1e+300 is out of range; allowed: (0, 600] s");
  expectError(keys[6].text, "11", "'lr' = 11 is out of range; allowed: (0, 10]");
  expectError(keys[6].text, "-0.1", "'lr' = -0.1 is out of range; allowed: (0, 10]");
  expectError(keys[8].text, "1e9",
              "'duration' = 1000000000 is out of range; allowed: (0, 3600] s (omit: forever)");
  expectError(keys[5].text, "-1", "'compute_ms' = -1 is out of range; allowed: [0, 60000] ms");
}

const std::string kSizeStep = kHeader + kCluster + kSteps +
                              "[[workload.steps]]\nop = \"all_reduce\"\nsize = \"@\"\n" + kSuccess;
const std::string kAllowedSize = "; allowed: 0 to 1073741824 elements";

TEST(ScenarioNumbers, SizesThatOverflowOrWrapAreErrors) {
  expectError(kSizeStep, "99999999999999999999B",
              "'size' = \"99999999999999999999B\": the number overflows a 64-bit byte count" +
                  kAllowedSize);
  // 2^34 GiB = 2^64 bytes: a plain shift wraps this to 0.
  expectError(kSizeStep, "17179869184GiB",
              "'size' = \"17179869184GiB\": the size overflows a 64-bit byte count" +
                  kAllowedSize);
  // 2^33 GiB = 2^63 bytes: a plain shift wraps this to a negative size.
  expectError(kSizeStep, "8589934592GiB",
              "'size' = \"8589934592GiB\": the size overflows a 64-bit byte count" +
                  kAllowedSize);
}

TEST(ScenarioNumbers, NegativeSizesAreErrors) {
  expectError(kSizeStep, "-4KiB",
              "'size' = \"-4KiB\": sizes cannot be negative" + kAllowedSize);
  const std::string numel = kHeader + kCluster + kSteps +
                            "[[workload.steps]]\nop = \"all_reduce\"\nnumel = @\n" + kSuccess;
  expectError(numel, "-1", "'numel' = -1 is out of range [0, 1073741824]");
}

TEST(ScenarioNumbers, SizesPastTheElementLimitAreErrors) {
  expectError(kSizeStep, "8GiB",
              "'size' = \"8GiB\": 2147483648 elements of float32 is past the limit of "
              "1073741824 elements per tensor" + kAllowedSize);
  const std::string numel = kHeader + kCluster + kSteps +
                            "[[workload.steps]]\nop = \"all_reduce\"\nnumel = @\n" + kSuccess;
  expectError(numel, "1073741825", "'numel' = 1073741825 is out of range [0, 1073741824]");
  // The limit is in elements: 4 GiB of float32 is exactly the limit.
  int line = 0;
  EXPECT_EQ(errorFor(kSizeStep, "4GiB", &line).find("no error for"), 0u);
}

TEST(ScenarioNumbers, BatchCountsOutsideTheirRangeAreErrors) {
  const std::string text = kHeader + kCluster +
                           "[workload]\nkind = \"training\"\n[workload.batches]\n0 = @\n" +
                           kSuccess;
  expectError(text, "5000000000", "batches of rank 0 must be an integer in [0, 10000]");
  expectError(text, "-1", "batches of rank 0 must be an integer in [0, 10000]");
}

TEST(ScenarioNumbers, RankKeysMustBePlainRanks) {
  const std::string perRank = kHeader + kCluster + kSteps +
                              "[workload.steps.per_rank]\n@ = { numel = 3 }\n" + kSuccess;
  const std::string batches =
      kHeader + kCluster + "[workload]\nkind = \"training\"\n[workload.batches]\n@ = 2\n" +
      kSuccess;
  const std::string expectRank = kHeader + kCluster + kSteps +
                                 "[expect]\noutcome = \"success\"\n[expect.rank.@]\n"
                                 "status = \"ok\"\n";
  for (const char* key : {"1abc", "-1", "01x", "2", "99999999999"}) {
    const std::string k = key;
    expectError(perRank, k,
                "per_rank key '" + k + "' is not a rank of this world: use a number in 0..1");
    expectError(batches, k,
                "batches key '" + k + "' is not a rank of this world: use a number in 0..1");
    expectError(expectRank, k,
                "[expect.rank.N] key '" + k + "' is not a rank of this world: use a number in 0..1");
  }
}

}  // namespace
}  // namespace distlab::emulator
