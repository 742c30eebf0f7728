// analyzeRankDumps on hand-written dumps: each divergence kind, uneven
// collectives that must pass, and clear errors for bad input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "emulator/analyze/fr_analysis.hpp"
#include "runtime/core/errors.hpp"
#include "tests/support/temp_dir.hpp"

namespace distlab::emulator {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

json entry(uint64_t seq, const std::string& op, json in, json out = json(),
           const std::string& state = "completed", const std::string& dtype = "float32") {
  if (out.is_null()) out = in;
  json dIn = json::array(), dOut = json::array();
  for (size_t i = 0; i < in.size(); ++i) dIn.push_back(dtype);
  for (size_t i = 0; i < out.size(); ++i) dOut.push_back(dtype);
  const bool p2p = op == "SEND" || op == "RECV";
  return {{"pg_id", "g"},         {"collective_seq_id", p2p ? 0 : seq},
          {"p2p_seq_id", p2p ? seq : 0},
          {"is_p2p", p2p},        {"profiling_name", "shm:" + op},
          {"op_type", op},        {"input_sizes", in},
          {"output_sizes", out},  {"input_dtypes", dIn},
          {"output_dtypes", dOut}, {"state", state}};
}

RankDump dump(int rank, std::vector<json> entries, int world = 3) {
  json ranks = json::array();
  for (int r = 0; r < world; ++r) ranks.push_back(r);
  uint64_t enq = 0, done = 0;
  for (const auto& e : entries) {
    if (e["is_p2p"]) continue;
    enq = std::max<uint64_t>(enq, e["collective_seq_id"]);
    if (e["state"] == "completed") done = std::max<uint64_t>(done, e["collective_seq_id"]);
  }
  json d{{"version", "2.4-distlab"},
         {"rank", rank},
         {"pg_config", {{"g", {{"name", "g"}, {"desc", "default_pg"}, {"ranks", ranks}}}}},
         {"pg_status",
          {{"g", {{"last_enqueued_collective", enq}, {"last_completed_collective", done}}}}},
         {"entries", entries}};
  return parseDump(d.dump(), "rank" + std::to_string(rank));
}

const json k10 = json::parse("[[10]]");

TEST(FrAnalysis, AgreeingRanksHaveNoDivergence) {
  auto r = analyzeRankDumps({dump(0, {entry(1, "ALLREDUCE", k10)}),
                             dump(1, {entry(1, "ALLREDUCE", k10)}),
                             dump(2, {entry(1, "ALLREDUCE", k10)})});
  EXPECT_FALSE(r.foundDivergence());
  EXPECT_THAT(r.text, HasSubstr("No divergence found"));
}

TEST(FrAnalysis, RankThatNeverJoinedIsTheCulprit) {
  auto r = analyzeRankDumps({dump(0, {entry(1, "ALLREDUCE", k10), entry(2, "ALLREDUCE", k10, {}, "started")}),
                             dump(1, {entry(1, "ALLREDUCE", k10), entry(2, "ALLREDUCE", k10, {}, "started")}),
                             dump(2, {entry(1, "ALLREDUCE", k10)})});
  ASSERT_EQ(r.divergences.size(), 1u);
  EXPECT_EQ(r.divergences[0].kind, "NOT_JOINED");
  EXPECT_THAT(r.divergences[0].culprits, ElementsAre(2));
  EXPECT_THAT(r.divergences[0].text,
              HasSubstr("Not all ranks joining collective 2 in group g (default_pg) / collective: "
                        "shm:ALLREDUCE / missing ranks: {2} / joined ranks: {0, 1} / input "
                        "sizes: [[10]] / expected ranks: 3 / collective state: started"));
}

TEST(FrAnalysis, MissingDumpMeansTheRankDied) {
  auto r = analyzeRankDumps({dump(0, {entry(1, "ALLREDUCE", k10), entry(2, "ALLREDUCE", k10, {}, "failed")}),
                             dump(1, {entry(1, "ALLREDUCE", k10), entry(2, "ALLREDUCE", k10, {}, "failed")})});
  ASSERT_EQ(r.divergences.size(), 1u);
  EXPECT_EQ(r.divergences[0].seq, 2u);
  EXPECT_THAT(r.divergences[0].noDump, ElementsAre(2));
  EXPECT_THAT(r.divergences[0].culprits, ElementsAre(2));
}

TEST(FrAnalysis, SizeMismatchNamesTheMinority) {
  auto r = analyzeRankDumps({dump(0, {entry(1, "ALLREDUCE", k10, {}, "failed")}),
                             dump(1, {entry(1, "ALLREDUCE", json::parse("[[1025]]"), {}, "failed")}),
                             dump(2, {entry(1, "ALLREDUCE", k10, {}, "failed")})});
  ASSERT_EQ(r.divergences.size(), 1u);
  EXPECT_EQ(r.divergences[0].text,
            "Collective 1 in group g (default_pg): Culprit rank 1; Error type: "
            "SIZE_OR_SYNTAX_MISMATCH, Expected input sizes: '[[10]]' does not match found input "
            "sizes: '[[1025]]'");
}

TEST(FrAnalysis, UnevenAllgatherPassesAndABadExpectationIsCaught) {
  const json outs = json::parse("[[1], [2], [3]]");
  auto ok = analyzeRankDumps({dump(0, {entry(1, "ALLGATHER", json::parse("[[1]]"), outs)}),
                              dump(1, {entry(1, "ALLGATHER", json::parse("[[2]]"), outs)}),
                              dump(2, {entry(1, "ALLGATHER", json::parse("[[3]]"), outs)})});
  EXPECT_FALSE(ok.foundDivergence()) << ok.text;
  auto bad = analyzeRankDumps({dump(0, {entry(1, "ALLGATHER", json::parse("[[1]]"), outs)}),
                               dump(1, {entry(1, "ALLGATHER", json::parse("[[2]]"), outs)}),
                               dump(2, {entry(1, "ALLGATHER", json::parse("[[4]]"), outs)})});
  ASSERT_TRUE(bad.foundDivergence());
  EXPECT_EQ(bad.divergences[0].kind, "SIZE_OR_SYNTAX_MISMATCH");
  EXPECT_THAT(bad.divergences[0].culprits, ElementsAre(2));
}

TEST(FrAnalysis, JoinedButNotFinished) {
  auto r = analyzeRankDumps({dump(0, {entry(1, "BARRIER", json::array())}),
                             dump(1, {entry(1, "BARRIER", json::array(), {}, "started")}),
                             dump(2, {entry(1, "BARRIER", json::array())})});
  ASSERT_EQ(r.divergences.size(), 1u);
  EXPECT_EQ(r.divergences[0].kind, "NOT_FINISHED");
  EXPECT_THAT(r.divergences[0].notFinished, ElementsAre(1));
  EXPECT_THAT(r.divergences[0].culprits, ElementsAre(1));
}

TEST(FrAnalysis, UnmatchedSendNamesTheReceiver) {
  json send = entry(1, "SEND", k10, json::array());
  send["peer"] = 1;
  auto r = analyzeRankDumps({dump(0, {send}, 2), dump(1, {}, 2)});
  ASSERT_EQ(r.divergences.size(), 1u);
  EXPECT_EQ(r.divergences[0].kind, "UNMATCHED_P2P");
  EXPECT_THAT(r.divergences[0].culprits, ElementsAre(1));
  EXPECT_THAT(r.divergences[0].text, HasSubstr("rank 0 send #1 to rank 1 was never matched"));
}

TEST(FrAnalysis, BadInputGivesClearErrors) {
  testing::TempDir dir;
  const std::string bad = dir.file("bad.json"), partial = dir.file("partial.json");
  std::ofstream(bad) << "{ not json";
  std::ofstream(partial) << R"({"version": "2.4-distlab", "rank": 0, "entries": [{"pg_id": "g"}]})";
  try {
    analyzeDumps({bad});
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("analyze: " + bad + ": not valid JSON"));
  }
  try {
    analyzeDumps({partial});
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr(": entry 0: missing field 'collective_seq_id'"));
  }
  EXPECT_THROW(analyzeDumps({dir.file("absent.json")}), ValueError);
  EXPECT_THROW(analyzeDumps({}), ValueError);
  EXPECT_THROW(analyzeRankDumps({dump(0, {}), dump(0, {})}), ValueError);
}

}  // namespace
}  // namespace distlab::emulator
