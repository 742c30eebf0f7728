// `distlab analyze` on PyTorch-format flight-recorder dumps, built here from
// PyTorch's documented dump format (pickles named <prefix><rank>, and the
// JSON form): the verdict for a hang, a size and a dtype mismatch and a clean
// run, no false alarm on PyTorch's flat all_gather output and per-group
// point-to-point numbering, clear errors for bad input; and the round trip
// distlab dump -> --export-torch -> read back -> the same verdict.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "emulator/analyze/fr_analysis.hpp"
#include "emulator/analyze/pickle_reader.hpp"
#include "emulator/analyze/pickle_writer.hpp"
#include "emulator/analyze/torch_dump_export.hpp"
#include "runtime/core/errors.hpp"
#include "tests/support/temp_dir.hpp"

namespace distlab::emulator {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// One entry as PyTorch's NCCL group records it.
json torchEntry(uint64_t seq,
                const std::string& name,
                json in,
                json out = json(),
                const std::string& state = "completed",
                const std::string& dtype = "Float",
                uint64_t p2pSeq = 0) {
  if (out.is_null()) out = in;
  json dIn = json::array(), dOut = json::array();
  for (size_t i = 0; i < in.size(); ++i) dIn.push_back(dtype);
  for (size_t i = 0; i < out.size(); ++i) dOut.push_back(dtype);
  const bool p2p = name.rfind("nccl:send", 0) == 0 || name.rfind("nccl:recv", 0) == 0;
  return {{"record_id", 0},
          {"pg_id", 0},
          {"process_group", {"0", "default_pg"}},
          {"collective_seq_id", seq},
          {"p2p_seq_id", p2pSeq},
          {"op_id", seq},
          {"profiling_name", name},
          {"time_created_ns", 1},
          {"input_sizes", in},
          {"input_dtypes", dIn},
          {"output_sizes", out},
          {"output_dtypes", dOut},
          {"state", state},
          {"time_discovered_started_ns", nullptr},
          {"time_discovered_completed_ns", nullptr},
          {"retired", state == "completed"},
          {"timeout_ms", 600000},
          {"is_p2p", p2p},
          {"frames", json::array()}};
}

// A rank's dump as PyTorch's pickle holds it: no rank (the file name has it),
// ranks as the text of the list.
json torchDump(std::vector<json> entries, int world = 3) {
  std::string ranks = "[";
  for (int r = 0; r < world; ++r) ranks += (r ? ", " : "") + std::to_string(r);
  for (size_t i = 0; i < entries.size(); ++i) entries[i]["record_id"] = i;
  return {{"version", "2.9"},
          {"comm_lib_version", "2.21.5"},
          {"pg_config", {{"0", {{"name", "0"}, {"desc", "default_pg"}, {"ranks", ranks + "]"}}}}},
          {"pg_status",
           {{"0",
             {{"last_enqueued_collective", 0},
              {"last_started_collective", 0},
              {"last_completed_collective", 0}}}}},
          {"entries", entries}};
}

std::string writeFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

class FrTorch : public ::testing::Test {
 protected:
  // Pickles each rank's dump as DIR/fr_rank_<r> and analyzes them.
  AnalysisResult analyze(const std::vector<json>& dumps) {
    std::vector<std::string> paths;
    for (size_t r = 0; r < dumps.size(); ++r) {
      paths.push_back(writeFile(dir_.file("fr_rank_" + std::to_string(r)), toPickle(dumps[r])));
    }
    return analyzeDumps(paths);
  }
  std::string errorOf(const std::string& name, const std::string& bytes) {
    try {
      analyzeDumps({writeFile(dir_.file(name), bytes)});
    } catch (const ValueError& e) {
      return e.what();
    }
    return "no error";
  }
  testing::TempDir dir_;
};

const json k10 = json::parse("[[10]]");
const json k12 = json::parse("[[12]]");

TEST_F(FrTorch, FullyMatchedIsNoFinding) {
  const json d =
      torchDump({torchEntry(1, "nccl:all_reduce", k10), torchEntry(2, "nccl:broadcast", k10)});
  const auto r = analyze({d, d, d});
  EXPECT_FALSE(r.foundDivergence()) << r.text;
  EXPECT_THAT(r.ranks, ElementsAre(0, 1, 2));
  EXPECT_THAT(r.text, HasSubstr("FULLY_MATCHED"));
}

TEST_F(FrTorch, HangNamesTheRankThatNeverJoined) {
  const json joined = torchDump({torchEntry(1, "nccl:all_reduce", k10),
                                 torchEntry(2, "nccl:all_reduce", k10, {}, "started")});
  const auto r = analyze({joined, joined, torchDump({torchEntry(1, "nccl:all_reduce", k10)})});
  ASSERT_EQ(r.divergences.size(), 1u) << r.text;
  EXPECT_EQ(r.divergences[0].kind, "NOT_JOINED");
  EXPECT_EQ(r.divergences[0].matchState, "NOT_ALL_RANKS_JOINED");
  EXPECT_EQ(r.divergences[0].seq, 2u);
  EXPECT_THAT(r.divergences[0].culprits, ElementsAre(2));
}

TEST_F(FrTorch, DeadRankWithoutADumpIsNamed) {
  const json joined = torchDump({torchEntry(1, "nccl:all_reduce", k10, {}, "started")});
  const auto r = analyze({joined, joined});  // rank 2 of 3 left no dump
  ASSERT_EQ(r.divergences.size(), 1u) << r.text;
  EXPECT_THAT(r.divergences[0].noDump, ElementsAre(2));
  EXPECT_EQ(r.divergences[0].matchState, "UNDECIDED");
  EXPECT_THAT(r.divergences[0].text, HasSubstr("left no dump: the process most likely died"));
}

TEST_F(FrTorch, SizeMismatchNamesTheCulprit) {
  const json ok = torchDump({torchEntry(1, "nccl:all_reduce", k10)});
  const auto r = analyze({ok, torchDump({torchEntry(1, "nccl:all_reduce", k12)}), ok});
  ASSERT_EQ(r.divergences.size(), 1u) << r.text;
  EXPECT_EQ(r.divergences[0].kind, "SIZE_OR_SYNTAX_MISMATCH");
  EXPECT_EQ(r.divergences[0].matchState, "SIZE_OR_SYNTAX_MISMATCH");
  EXPECT_THAT(r.divergences[0].culprits, ElementsAre(1));
}

TEST_F(FrTorch, DtypeMismatchNamesTheCulprit) {
  const json ok = torchDump({torchEntry(1, "nccl:all_reduce", k10)});
  const auto r = analyze(
      {ok, ok, torchDump({torchEntry(1, "nccl:all_reduce", k10, {}, "completed", "Half")})});
  ASSERT_EQ(r.divergences.size(), 1u) << r.text;
  EXPECT_EQ(r.divergences[0].kind, "DTYPE_MISMATCH");
  EXPECT_EQ(r.divergences[0].matchState, "COLLECTIVE_DTYPE_MISMATCH");
  EXPECT_THAT(r.divergences[0].culprits, ElementsAre(2));
  EXPECT_THAT(r.divergences[0].text, HasSubstr("float16"));  // c10's "Half", distlab's name
}

// PyTorch records an all_gather's output as one flat tensor ([world, n]) and
// numbers send/recv per group: neither is a finding.
TEST_F(FrTorch, FlatAllGatherAndPerGroupP2PNumberingAreNoFalseAlarm) {
  const json gather =
      torchEntry(1, "nccl:all_gather", json::parse("[[4]]"), json::parse("[[3, 4]]"));
  // Rank 1 sends to 0 then 2; each peer sees its recv as p2p number 1 of its
  // own, while rank 1 counts 1 and 2.
  const auto r = analyze(
      {torchDump({gather, torchEntry(1, "nccl:recv 0<-1", k10, {}, "completed", "Float", 1)}),
       torchDump({gather, torchEntry(1, "nccl:send 1->0", k10, {}, "completed", "Float", 1),
                  torchEntry(1, "nccl:send 1->2", k10, {}, "completed", "Float", 2)}),
       torchDump({gather, torchEntry(1, "nccl:recv 2<-1", k10, {}, "completed", "Float", 1)})});
  EXPECT_FALSE(r.foundDivergence()) << r.text;
}

TEST_F(FrTorch, ReadsPyTorchsJsonForm) {
  json d = torchDump({torchEntry(1, "nccl:all_reduce", k10)});
  d["pg_status"]["0"] = {{"last_enqueued_collective", "1"},
                         {"last_started_collective", "1"},
                         {"last_completed_collective", "1"}};
  d["entries"][0]["time_discovered_started_ns"] = 0;
  const json hung =
      torchDump({torchEntry(1, "nccl:all_reduce", k10),
                 torchEntry(2, "nccl:all_gather", k10, json::parse("[[30]]"), "started")});
  std::vector<std::string> paths{writeFile(dir_.file("trace_0"), d.dump()),
                                 writeFile(dir_.file("trace_1"), hung.dump()),
                                 writeFile(dir_.file("trace_2"), toPickle(hung))};
  const auto r = analyzeDumps(paths);
  ASSERT_EQ(r.divergences.size(), 1u) << r.text;
  EXPECT_EQ(r.divergences[0].kind, "NOT_JOINED");
  EXPECT_THAT(r.divergences[0].culprits, ElementsAre(0));
  EXPECT_THAT(r.divergences[0].text, HasSubstr("last enqueued collective: 0: 1"));  // pg_status
}

TEST_F(FrTorch, BadInputNamesTheFileTheFieldAndTheFix) {
  json noState = torchDump({torchEntry(1, "nccl:all_reduce", k10)});
  noState["entries"][0].erase("state");
  EXPECT_THAT(errorOf("fr_0", toPickle(noState)),
              HasSubstr("fr_0: entry 0: missing field 'state'"));
  json badVersion = torchDump({});
  badVersion["version"] = "2.x";
  EXPECT_THAT(errorOf("fr_0", toPickle(badVersion)),
              HasSubstr("top level: 'version' = \"2.x\" is not a PyTorch dump version this "
                        "reader knows; expected \"2.<minor>\""));
  EXPECT_THAT(errorOf("fr_0", toPickle(torchDump({torchEntry(1, "nccl:frobnicate", k10)}))),
              HasSubstr("entry 0: 'profiling_name' = \"nccl:frobnicate\" names no operation "
                        "this reader knows; expected one of broadcast,"));
  EXPECT_THAT(
      errorOf("fr_0", toPickle(torchDump({torchEntry(1, "nccl:send", k10)}))),
      HasSubstr("does not name its peer in a group of 3 ranks; expected \"nccl:send 0->1\""));
  EXPECT_THAT(errorOf("dump.pkl", toPickle(torchDump({}))),
              HasSubstr("dump.pkl: the file name does not end in the rank"));
  const std::string whole = toPickle(torchDump({torchEntry(1, "nccl:all_reduce", k10)}));
  EXPECT_THAT(errorOf("fr_1", whole.substr(0, whole.size() / 2)), HasSubstr("fr_1: pickle: byte "));
}

// ---- export: distlab's dumps in PyTorch's format --------------------------------

json distlabEntry(uint64_t seq,
                  const std::string& op,
                  json in,
                  json out = json(),
                  const std::string& state = "completed",
                  const std::string& dtype = "float32",
                  int peer = -1,
                  uint64_t record = 0) {
  if (out.is_null()) out = in;
  json dIn = json::array(), dOut = json::array();
  for (size_t i = 0; i < in.size(); ++i) dIn.push_back(dtype);
  for (size_t i = 0; i < out.size(); ++i) dOut.push_back(dtype);
  const bool p2p = op == "SEND" || op == "RECV";
  return {{"record_id", record},
          {"pg_id", "g"},
          {"process_group", {"g", "default_pg"}},
          {"collective_seq_id", p2p ? 0 : seq},
          {"p2p_seq_id", p2p ? seq : 0},
          {"is_p2p", p2p},
          {"profiling_name", "shm:" + op},
          {"op_type", op},
          {"input_sizes", in},
          {"output_sizes", out},
          {"input_dtypes", dIn},
          {"output_dtypes", dOut},
          {"state", state},
          {"peer", peer},
          {"time_discovered_started_ns", state == "scheduled" ? json() : json(5)}};
}

std::string distlabDump(const testing::TempDir& dir,
                        int rank,
                        std::vector<json> entries,
                        int world = 3) {
  json ranks = json::array();
  for (int r = 0; r < world; ++r) ranks.push_back(r);
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i]["record_id"] == 0) entries[i]["record_id"] = i + 1;
  }
  const json d{{"version", "2.4-distlab"},
               {"rank", rank},
               {"pg_config", {{"g", {{"name", "g"}, {"desc", "default_pg"}, {"ranks", ranks}}}}},
               {"entries", entries}};
  return writeFile(dir.file("fr_rank_" + std::to_string(rank) + ".json"), d.dump());
}

// The verdict of the distlab dumps and of their export must agree.
void expectSameVerdict(const std::vector<std::string>& dumps, const testing::TempDir& out) {
  const AnalysisResult direct = analyzeDumps(dumps);
  const std::vector<std::string> exported = exportTorchDumps(dumps, out.path());
  ASSERT_EQ(exported.size(), dumps.size());
  const AnalysisResult back = analyzeDumps(exported);
  ASSERT_EQ(back.divergences.size(), direct.divergences.size()) << direct.text << back.text;
  for (size_t i = 0; i < direct.divergences.size(); ++i) {
    EXPECT_EQ(back.divergences[i].kind, direct.divergences[i].kind) << back.text;
    EXPECT_EQ(back.divergences[i].culprits, direct.divergences[i].culprits) << back.text;
    EXPECT_EQ(back.divergences[i].seq, direct.divergences[i].seq) << back.text;
  }
}

TEST_F(FrTorch, RoundTripKeepsTheVerdict) {
  const json gather = json::parse("[[4], [4], [4]]");
  const auto hang = [&](int r) {
    std::vector<json> e{distlabEntry(1, "ALLGATHER", json::parse("[[4]]"), gather)};
    if (r != 1) e.push_back(distlabEntry(2, "ALLREDUCE", k10, {}, "failed"));
    return distlabDump(dir_, r, e);
  };
  testing::TempDir out1, out2, out3;
  expectSameVerdict({hang(0), hang(1), hang(2)}, out1);
  expectSameVerdict({distlabDump(dir_, 0, {distlabEntry(1, "ALLREDUCE", k10)}),
                     distlabDump(dir_, 1, {distlabEntry(1, "ALLREDUCE", k10)}),
                     distlabDump(dir_, 2, {distlabEntry(1, "ALLREDUCE", k12)})},
                    out2);
  expectSameVerdict(
      {distlabDump(dir_, 0, {distlabEntry(1, "SEND", k10, {}, "completed", "float32", 1)}),
       distlabDump(dir_, 1, {distlabEntry(1, "RECV", k10, {}, "completed", "float32", 0)})},
      out3);
}

// What PyTorch's analyzer cannot see (its dumps hold no reduce op or root)
// distlab still names, on its own dumps and on their export.
TEST_F(FrTorch, ReduceOpAndRootMismatchesSurviveTheExport) {
  const auto withOp = [&](int r, const std::string& reduceOp, int root) {
    json a = distlabEntry(1, "ALLREDUCE", k10);
    a["reduce_op"] = reduceOp;
    json b = distlabEntry(1, "BROADCAST", k10, {}, "completed", "float32", root);
    b["collective_seq_id"] = 2;
    return distlabDump(dir_, r, {a, b});
  };
  const std::vector<std::string> reduce{withOp(0, "SUM", 0), withOp(1, "MAX", 0),
                                        withOp(2, "SUM", 0)};
  const auto r = analyzeDumps(reduce);
  ASSERT_EQ(r.divergences.size(), 1u) << r.text;
  EXPECT_EQ(r.divergences[0].kind, "REDUCE_OP_MISMATCH");
  EXPECT_THAT(r.divergences[0].culprits, ElementsAre(1));
  EXPECT_EQ(r.divergences[0].matchState, "FULLY_MATCHED");
  testing::TempDir out1, out2;
  expectSameVerdict(reduce, out1);
  const std::vector<std::string> root{withOp(0, "SUM", 0), withOp(1, "SUM", 0),
                                      withOp(2, "SUM", 1)};
  const auto r2 = analyzeDumps(root);
  ASSERT_EQ(r2.divergences.size(), 1u) << r2.text;
  EXPECT_EQ(r2.divergences[0].kind, "ROOT_MISMATCH");
  EXPECT_THAT(r2.divergences[0].culprits, ElementsAre(2));
  expectSameVerdict(root, out2);
}

TEST_F(FrTorch, ExportWritesPyTorchsFields) {
  const std::string d = distlabDump(
      dir_, 0,
      {distlabEntry(1, "ALLGATHER", json::parse("[[4]]"), json::parse("[[4], [4], [4]]")),
       distlabEntry(1, "SEND", k10, {}, "completed", "float32", 2),
       distlabEntry(2, "REDUCE_SCATTER", json::parse("[[4], [4], [4]]"), json::parse("[[4]]"),
                    "failed")});
  testing::TempDir out;
  const auto paths = exportTorchDumps({d}, out.path());
  ASSERT_EQ(paths, std::vector<std::string>{out.file("fr_rank_0")});
  std::ifstream in(paths[0], std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const json t = fromPickle(bytes, paths[0]);
  EXPECT_EQ(t["version"], "2.7");
  EXPECT_EQ(t["pg_config"]["g"]["ranks"], "[0, 1, 2]");
  EXPECT_EQ(t["pg_status"]["0"]["last_enqueued_collective"], 0);
  const json& e = t["entries"];
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0]["profiling_name"], "nccl:all_gather");
  EXPECT_EQ(e[0]["output_sizes"], json::parse("[[3, 4]]"));
  EXPECT_EQ(e[0]["output_dtypes"], json::parse(R"(["Float"])"));
  EXPECT_EQ(e[1]["profiling_name"], "nccl:send 0->2");
  EXPECT_EQ(e[1]["collective_seq_id"], 1);  // the collective current when it was sent
  EXPECT_EQ(e[1]["p2p_seq_id"], 1);
  EXPECT_EQ(e[2]["input_sizes"], json::parse("[[3, 4]]"));
  EXPECT_EQ(e[2]["state"], "started");  // "failed" is not one of PyTorch's states
  EXPECT_EQ(e[2]["record_id"], 2);
  EXPECT_EQ(e[2]["process_group"], json::parse(R"(["g", "default_pg"])"));
}

TEST_F(FrTorch, ExportToAFolderThatCannotBeMadeNamesIt) {
  const std::string d = distlabDump(dir_, 0, {distlabEntry(1, "ALLREDUCE", k10)});
  const std::string blocked = writeFile(dir_.file("plain_file"), "x") + "/out";
  try {
    exportTorchDumps({d}, blocked);
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(),
                HasSubstr("analyze: --export-torch " + blocked + ": cannot create the folder"));
  }
}

// The real `distlab analyze --export-torch`: exit 1 for the divergence, one
// pickle per rank, exit 2 naming the folder it cannot write.
TEST_F(FrTorch, CliExportsAndAnalyzes) {
  const std::string a = distlabDump(dir_, 0, {distlabEntry(1, "ALLREDUCE", k10)});
  const std::string b = distlabDump(dir_, 1, {distlabEntry(1, "ALLREDUCE", k12)});
  const auto run = [](const std::string& args) {
    const std::string cmd =
        "timeout -s KILL 60 " + std::string(DISTLAB_CLI_PATH) + " analyze " + args + " 2>&1";
    std::string out;
    FILE* p = popen(cmd.c_str(), "r");
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    const int status = pclose(p);
    return std::make_pair(WIFEXITED(status) ? WEXITSTATUS(status) : -1, out);
  };
  const auto [code, out] = run("--export-torch " + dir_.file("torch") + " " + a + " " + b);
  EXPECT_EQ(code, 1) << out;
  EXPECT_TRUE(std::filesystem::exists(dir_.file("torch/fr_rank_0")));
  EXPECT_TRUE(std::filesystem::exists(dir_.file("torch/fr_rank_1")));
  const auto [again, text] = run(dir_.file("torch/fr_rank_0") + " " + dir_.file("torch/fr_rank_1"));
  EXPECT_EQ(again, 1) << text;
  EXPECT_THAT(text, HasSubstr("SIZE_OR_SYNTAX_MISMATCH"));
  const std::string blocked = writeFile(dir_.file("plain"), "x") + "/out";
  const auto [bad, why] = run("--export-torch " + blocked + " " + a);
  EXPECT_EQ(bad, 2) << why;
  EXPECT_THAT(why, HasSubstr("--export-torch " + blocked + ": cannot create the folder"));
}

}  // namespace
}  // namespace distlab::emulator
