#include "emulator/bench/nccl_tests_output.hpp"

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runtime/core/errors.hpp"

namespace distlab::emulator {
namespace {

using OrderedJson = nlohmann::ordered_json;  // nccl-tests' key order

// nccl-tests' root column: a rooted op's root, -1 for the others, as its
// "%6i" writes it (the JSON keeps that string).
std::string rootField(const std::string& op) { return fmt::format("{:6}", benchOpRoot(op)); }

double algbwAt(const BenchRow& r, double timeUs) {
  return timeUs > 0 ? static_cast<double>(r.bytes) / (timeUs * 1e3) : 0.0;
}

std::ofstream openFor(const std::string& flag, const std::string& path) {
  std::ofstream out(path);
  if (!out) {
    throw Error(fmt::format("{}: cannot write {}: {}", flag, path, std::strerror(errno)));
  }
  return out;
}

OrderedJson ncclResult(const BenchRow& r, const CollectivesBenchOptions& o) {
  const double time = ncclTestsTimeUs(r, o.average);
  const double algbw = algbwAt(r, time);
  return OrderedJson{
      {"size", r.bytes},
      {"count", r.count},
      {"type", "float"},
      {"redop", benchOpReduces(r.op) ? "sum" : "none"},
      {"root", rootField(r.op)},
      {"out_of_place",
       {{"time", time},
        {"alg_bw", algbw},
        {"bus_bw", algbw * busBandwidthFactor(r.op, o.worldSize)},
        {"nwrong", r.checked ? OrderedJson(static_cast<double>(r.wrong)) : OrderedJson(nullptr)}}},
      {"in_place", nullptr},
      {"actual_iterations", r.iters},
      {"experiment_name", fmt::format("{}/{}/{}", r.backend, r.op, r.mode)},
      {"distlab",
       {{"backend", r.backend},
        {"mode", r.mode},
        {"op", r.op},
        {"time_p50_slowest_rank_us", r.p50Us},
        {"time_rank0_us", r.rank0MeanUs},
        {"time_avg_us", r.rankMeanAvgUs},
        {"time_min_us", r.rankMeanMinUs},
        {"time_max_us", r.rankMeanMaxUs}}}};
}

OrderedJson ncclConfig(const CollectivesBenchOptions& o) {
  OrderedJson devices = OrderedJson::array();
  for (int r = 0; r < o.worldSize; ++r) {
    devices.push_back({{"rank", r}, {"group", 0}, {"device", -1}, {"device_info", o.device == "auto" ? "auto: cuda for a CUDA-only backend, else cpu"
                                                          : o.device}});
  }
  return OrderedJson{{"nthreads", 1},
              {"ngpus", 1},
              {"minimum_bytes", o.minBytes},
              {"maximum_bytes", o.maxBytes},
              {"step_factor", 2},
              {"warmup_iters", o.warmup},
              {"iterations", o.iters},
              {"aggregated_iterations", 1},
              {"validation", o.check ? 1 : 0},
              {"graph", 0},
              {"blocking_collectives", "true"},
              {"per_iter_timing", "false"},
              {"parallel_init", "false"},
              {"devices", devices}};
}

}  // namespace

double ncclTestsTimeUs(const BenchRow& r, int average) {
  if (r.rankMeanAvgUs <= 0) return r.avgUs;  // a peer's row: its own mean only
  switch (average) {
    case 0: return r.rank0MeanUs;
    case 2: return r.rankMeanMinUs;
    case 3: return r.rankMeanMaxUs;
    default: return r.rankMeanAvgUs;
  }
}

std::string ncclTestsNow() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[64];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &local);
  return text;
}

void writeNcclTestsCsv(const std::string& path, const std::vector<BenchRow>& rows,
                       const CollectivesBenchOptions& o) {
  std::ofstream out = openFor("--csv", path);
  out << "backend,mode,op,size,count,type,redop,root,time,algbw,busbw,#wrong,time_rank0,"
         "time_avg,time_min,time_max\n";
  for (const BenchRow& r : rows) {
    if (!r.error.empty()) continue;
    const double time = ncclTestsTimeUs(r, o.average);
    const double algbw = algbwAt(r, time);
    out << fmt::format("{},{},{},{},{},float,{},{},{:.3f},{:.4f},{:.4f},{},{:.3f},{:.3f},{:.3f},"
                       "{:.3f}\n",
                       r.backend, r.mode, r.op, r.bytes, r.count,
                       benchOpReduces(r.op) ? "sum" : "none", benchOpRoot(r.op), time, algbw,
                       algbw * busBandwidthFactor(r.op, o.worldSize),
                       r.checked ? std::to_string(r.wrong) : std::string("N/A"), r.rank0MeanUs,
                       r.rankMeanAvgUs, r.rankMeanMinUs, r.rankMeanMaxUs);
  }
  if (!out.flush()) throw Error(fmt::format("--csv: writing {} failed", path));
}

void writeNcclTestsJson(const std::string& path, const std::vector<BenchRow>& rows,
                        const CollectivesBenchOptions& o, const std::string& startTime) {
  OrderedJson results = OrderedJson::array();
  OrderedJson errors = OrderedJson::array();
  int64_t wrong = 0;
  double busbwSum = 0;
  int measured = 0;
  for (const BenchRow& r : rows) {
    if (!r.error.empty()) {
      errors.push_back(r.error);
      continue;
    }
    results.push_back(ncclResult(r, o));
    wrong += r.checked ? r.wrong : 0;
    busbwSum += results.back()["out_of_place"]["bus_bw"].get<double>();
    ++measured;
  }
  OrderedJson file{{"version", 2},
            {"start_time", startTime},
            {"args", o.commandLine},
            {"env", OrderedJson::array()},
            {"nccl_version", 0},
            {"config", ncclConfig(o)},
            {"results", results},
            {"out_of_bounds", {{"count", wrong}, {"okay", wrong == 0 ? "true" : "false"}}},
            {"average_bus_bandwidth",
             {{"bandwidth", measured > 0 ? busbwSum / measured : 0.0}, {"okay", "unchecked"}}},
            {"errors", errors},
            {"end_time", ncclTestsNow()}};
  std::ofstream out = openFor("--nccl-OrderedJson", path);
  out << file.dump(2) << "\n";
  if (!out.flush()) throw Error(fmt::format("--nccl-OrderedJson: writing {} failed", path));
}

}  // namespace distlab::emulator
