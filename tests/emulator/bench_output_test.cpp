// `distlab bench collectives`' nccl-tests outputs (Note [nccl-tests output]):
// the CSV and JSON files checked against their schema and against each other,
// and --check on a backend that corrupts its results on purpose.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "emulator/bench/collectives_bench.hpp"
#include "runtime/comm/backend_registry.hpp"
#include "runtime/comm/forwarding_backend.hpp"
#include "runtime/core/errors.hpp"
#include "tests/support/temp_dir.hpp"

namespace distlab::emulator {
namespace {

using json = nlohmann::json;

// shm, except that rank 1's float32 all_reduce result is off by one in its
// first element once the operation completed: the check must count it (the
// bench's own int64 counters stay right).
class CorruptingBackend : public comm::ForwardingBackend {
 public:
  explicit CorruptingBackend(comm::BackendPtr inner) : ForwardingBackend(std::move(inner)) {}
  std::string name() const override { return "corrupting"; }

 protected:
  comm::WorkPtr intercept(const comm::Operation& op) override {
    comm::WorkPtr work = forward(op);
    if (op.type == comm::OpType::kAllreduce && rank() == 1 &&
        op.outputs.front().dtype() == DType::kFloat32) {
      work->wait();
      Tensor out = op.outputs.front();  // a handle on the caller's storage
      out.data<float>()[0] += 1.0f;
    }
    return work;
  }
};

const bool kCorruptingRegistered = [] {
  comm::BackendInfo info;
  info.name = "corrupting";
  info.factory = [](const comm::BackendContext& ctx) -> comm::BackendPtr {
    return std::make_shared<CorruptingBackend>(comm::lookupBackend("shm").factory(ctx));
  };
  comm::registerBackend(std::move(info));
  return true;
}();

CollectivesBenchOptions smallSweep(const testing::TempDir& dir) {
  CollectivesBenchOptions o;
  o.ops = {"all_reduce", "broadcast", "all_gather_into_tensor"};
  o.minBytes = 8;
  o.maxBytes = 64;
  o.iters = 5;
  o.warmup = 1;
  o.csvPath = dir.file("out.csv");
  o.ncclJsonPath = dir.file("out.json");
  o.commandLine = {"distlab", "bench", "collectives"};
  return o;
}

std::vector<std::string> splitCsv(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream in(line);
  for (std::string f; std::getline(in, f, ',');) fields.push_back(f);
  return fields;
}

// CSV rows as column -> text, after checking the header.
std::vector<std::map<std::string, std::string>> readCsv(const std::string& path) {
  std::ifstream in(path);
  std::string header;
  std::getline(in, header);
  const std::vector<std::string> columns = splitCsv(header);
  EXPECT_EQ(header,
            "backend,mode,op,size,count,type,redop,root,time,algbw,busbw,#wrong,time_rank0,"
            "time_avg,time_min,time_max");
  std::vector<std::map<std::string, std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    const std::vector<std::string> fields = splitCsv(line);
    EXPECT_EQ(fields.size(), columns.size()) << line;
    std::map<std::string, std::string>& row = rows.emplace_back();
    for (size_t i = 0; i < columns.size() && i < fields.size(); ++i) row[columns[i]] = fields[i];
  }
  return rows;
}

double number(const std::map<std::string, std::string>& row, const std::string& column) {
  size_t used = 0;
  const double v = std::stod(row.at(column), &used);
  EXPECT_EQ(used, row.at(column).size()) << column << " = " << row.at(column);
  EXPECT_TRUE(std::isfinite(v)) << column;
  return v;
}

void expectKeys(const json& object, const std::map<std::string, json::value_t>& keys,
                const std::string& where) {
  for (const auto& [key, type] : keys) {
    ASSERT_TRUE(object.contains(key)) << where << " lacks " << key;
    const json::value_t actual = object[key].type();
    const bool numeric = type == json::value_t::number_float &&
                         (actual == json::value_t::number_integer ||
                          actual == json::value_t::number_unsigned);
    EXPECT_TRUE(actual == type || numeric) << where << "." << key << " has the wrong type";
  }
}

TEST(BenchOutput, CsvAndJsonFollowNcclTestsAndAgree) {
  testing::TempDir dir;
  CollectivesBenchOptions o = smallSweep(dir);
  std::ostringstream table;
  ASSERT_EQ(runCollectivesBench(o, table), 0) << table.str();
  const auto csv = readCsv(o.csvPath);
  ASSERT_EQ(csv.size(), 3u * 4u);  // 3 ops x 4 sizes (8, 16, 32, 64 B)
  for (const auto& row : csv) {
    const double size = number(row, "size"), count = number(row, "count");
    EXPECT_EQ(size, 4 * count);  // float32 elements
    EXPECT_EQ(row.at("type"), "float");
    EXPECT_EQ(row.at("redop"), row.at("op") == "all_reduce" ? "sum" : "none");
    EXPECT_EQ(row.at("root"), row.at("op") == "broadcast" ? "0" : "-1");
    EXPECT_EQ(row.at("#wrong"), "0");
    const double time = number(row, "time"), algbw = number(row, "algbw");
    const double lo = number(row, "time_min"), avg = number(row, "time_avg");
    const double hi = number(row, "time_max"), rank0 = number(row, "time_rank0");
    EXPECT_GT(time, 0);
    EXPECT_EQ(time, avg);  // -a 1, the default
    EXPECT_LE(lo, avg);
    EXPECT_LE(avg, hi);
    EXPECT_LE(lo, rank0);
    EXPECT_LE(rank0, hi);
    // algbw = size / time in GB/s; both printed rounded (time to 1e-3 us,
    // algbw to 1e-4 GB/s), hence the tolerance of half a last digit each.
    const double expected = size / (time * 1e3);
    EXPECT_NEAR(algbw, expected, 0.5e-4 + expected * 0.5e-3 / time);
    const double factor = row.at("op") == "all_reduce" ? 1.0 : row.at("op") == "broadcast" ? 1.0
                                                                                          : 0.5;
    EXPECT_NEAR(number(row, "busbw"), algbw * factor, 1e-4);  // world 2
  }
  std::ifstream in(o.ncclJsonPath);
  const json j = json::parse(in);
  expectKeys(j, {{"version", json::value_t::number_unsigned},
                 {"start_time", json::value_t::string},
                 {"args", json::value_t::array},
                 {"env", json::value_t::array},
                 {"config", json::value_t::object},
                 {"results", json::value_t::array},
                 {"out_of_bounds", json::value_t::object},
                 {"average_bus_bandwidth", json::value_t::object},
                 {"errors", json::value_t::array},
                 {"end_time", json::value_t::string}},
             "file");
  EXPECT_EQ(j["version"], 2);
  expectKeys(j["config"], {{"minimum_bytes", json::value_t::number_unsigned},
                           {"maximum_bytes", json::value_t::number_unsigned},
                           {"warmup_iters", json::value_t::number_unsigned},
                           {"iterations", json::value_t::number_unsigned},
                           {"validation", json::value_t::number_unsigned},
                           {"devices", json::value_t::array}},
             "config");
  ASSERT_EQ(j["results"].size(), csv.size());
  for (size_t i = 0; i < csv.size(); ++i) {
    const json& r = j["results"][i];
    expectKeys(r, {{"size", json::value_t::number_unsigned},
                   {"count", json::value_t::number_unsigned},
                   {"type", json::value_t::string},
                   {"redop", json::value_t::string},
                   {"root", json::value_t::string},
                   {"out_of_place", json::value_t::object},
                   {"in_place", json::value_t::null},
                   {"actual_iterations", json::value_t::number_unsigned},
                   {"experiment_name", json::value_t::string}},
               "result");
    expectKeys(r["out_of_place"], {{"time", json::value_t::number_float},
                                   {"alg_bw", json::value_t::number_float},
                                   {"bus_bw", json::value_t::number_float},
                                   {"nwrong", json::value_t::number_float}},
               "out_of_place");
    EXPECT_EQ(r["size"].get<double>(), number(csv[i], "size"));
    // The CSV prints the time with 3 decimals, so it is off by up to half a
    // unit of the last digit (0.5e-3) plus the binary error of both decimal
    // numbers (0.3085 is stored as 0.30849999...: 1e-12 is far above that).
    EXPECT_NEAR(r["out_of_place"]["time"].get<double>(), number(csv[i], "time"), 0.5e-3 + 1e-12);
    EXPECT_EQ(std::stoi(r["root"].get<std::string>()), std::stoi(csv[i].at("root")));
  }
  EXPECT_EQ(j["out_of_bounds"]["count"], 0);
  EXPECT_EQ(j["args"], json(o.commandLine));
}

// Every op of Note [Bench operations] at world 3 (rooted ops have a root
// that is not every rank; the split ops a part per rank): every result
// verified, nccl-tests' redop / root / bus factor per op, barrier one row.
TEST(BenchOutput, EveryOpRunsVerifiedWithItsOwnConventions) {
  testing::TempDir dir;
  CollectivesBenchOptions o = smallSweep(dir);
  o.ops = kBenchOps;
  o.worldSize = 3;
  o.maxBytes = 4096;
  o.iters = 3;
  std::ostringstream table;
  ASSERT_EQ(runCollectivesBench(o, table), 0) << table.str();
  std::map<std::string, int> rowsPerOp;
  std::set<std::pair<std::string, std::string>> sizesSeen;
  for (const auto& row : readCsv(o.csvPath)) {
    const std::string& op = row.at("op");
    ++rowsPerOp[op];
    // 8 and 16 B of a split op are both 3 elements at world 3: one row.
    EXPECT_TRUE(sizesSeen.insert({op, row.at("size")}).second) << op << " at " << row.at("size");
    EXPECT_EQ(row.at("#wrong"), "0") << op << " at " << row.at("size");
    EXPECT_EQ(row.at("redop"), benchOpReduces(op) ? "sum" : "none") << op;
    EXPECT_EQ(std::stoi(row.at("root")), benchOpRoot(op)) << op;
    const bool split = benchElementCount(op, 64, 3) != 16 && op != "barrier";
    if (split) {
      EXPECT_EQ(static_cast<int64_t>(number(row, "count")) % 3, 0) << op;
    }
  }
  ASSERT_EQ(rowsPerOp.size(), kBenchOps.size());
  EXPECT_EQ(rowsPerOp.at("barrier"), 1);
  EXPECT_EQ(rowsPerOp.at("send_recv"), 10);  // 8 B .. 4 KiB
  EXPECT_EQ(rowsPerOp.at("all_gather"), 9);  // 8 B .. 4 KiB, 8 and 16 B one row
  EXPECT_EQ(benchOpRoot("gather"), 0);
  EXPECT_EQ(benchOpRoot("all_gather"), -1);
  EXPECT_TRUE(benchOpReduces("reduce_scatter"));
  EXPECT_DOUBLE_EQ(busBandwidthFactor("reduce", 3), 1.0);
  EXPECT_DOUBLE_EQ(busBandwidthFactor("all_to_all", 4), 0.75);
  EXPECT_DOUBLE_EQ(busBandwidthFactor("barrier", 4), 0.0);
}

TEST(BenchOutput, CheckCountsTheElementsACorruptingBackendGotWrong) {
  testing::TempDir dir;
  CollectivesBenchOptions o = smallSweep(dir);
  o.backends = {"corrupting"};
  o.ops = {"all_reduce"};
  std::ostringstream table;
  EXPECT_EQ(runCollectivesBench(o, table), 1) << table.str();  // a wrong result fails the run
  EXPECT_NE(table.str().find("Out of bounds values : 4 WRONG"), std::string::npos) << table.str();
  for (const auto& row : readCsv(o.csvPath)) EXPECT_EQ(row.at("#wrong"), "1");  // rank 1's first
  std::ifstream in(o.ncclJsonPath);
  const json j = json::parse(in);
  EXPECT_EQ(j["out_of_bounds"]["count"], 4);
  EXPECT_EQ(j["out_of_bounds"]["okay"], "false");
}

TEST(BenchOutput, WithoutCheckNothingIsCountedAndTheFilesSaySo) {
  testing::TempDir dir;
  CollectivesBenchOptions o = smallSweep(dir);
  o.backends = {"corrupting"};
  o.ops = {"all_reduce"};
  o.check = false;
  std::ostringstream table;
  EXPECT_EQ(runCollectivesBench(o, table), 0) << table.str();
  EXPECT_NE(table.str().find("N/A (--check 0)"), std::string::npos) << table.str();
  for (const auto& row : readCsv(o.csvPath)) EXPECT_EQ(row.at("#wrong"), "N/A");
  std::ifstream in(o.ncclJsonPath);
  const json j = json::parse(in);
  for (const json& r : j["results"]) EXPECT_TRUE(r["out_of_place"]["nwrong"].is_null());
  EXPECT_EQ(j["config"]["validation"], 0);
}

TEST(BenchOutput, AverageChoosesWhichCrossRankTimeTheFilesReport) {
  testing::TempDir dir;
  CollectivesBenchOptions o = smallSweep(dir);
  o.ops = {"all_reduce"};
  o.average = 3;
  std::ostringstream table;
  ASSERT_EQ(runCollectivesBench(o, table), 0) << table.str();
  for (const auto& row : readCsv(o.csvPath)) {
    EXPECT_EQ(number(row, "time"), number(row, "time_max"));
  }
  o.average = 4;
  EXPECT_THROW(runCollectivesBench(o, table), ValueError);
}

}  // namespace
}  // namespace distlab::emulator
