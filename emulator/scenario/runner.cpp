#include "emulator/scenario/runner.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "emulator/analyze/fr_analysis.hpp"
#include "emulator/launcher/exit_guard.hpp"
#include "emulator/scenario/expectations.hpp"
#include "emulator/scenario/program_command.hpp"
#include "emulator/scenario/rank_processes.hpp"
#include "emulator/scenario/scenario_device.hpp"
#include "emulator/scenario/scenario_parser.hpp"
#include "emulator/scenario/trace_writer.hpp"
#include "emulator/scenario/scenario_overlap.hpp"
#include "emulator/scenario/step_time_ratio.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/runtime_env.hpp"

namespace distlab::emulator {

namespace fs = std::filesystem;

namespace {

std::string fileStem(const Scenario& s) {
  std::string out = s.group + "__" + fs::path(s.path).stem().string();
  for (char& c : out) if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') c = '_';
  return out;
}

// Shared-memory segments named after one of the run's rank pids (the shm
// backend names its segments /distlab_shm_<pid>_<random>); removes them.
std::vector<std::string> leakedSegments(const std::vector<RankExit>& exits) {
  std::vector<std::string> leaked;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/dev/shm", ec)) {
    std::string name = entry.path().filename().string();
    for (const auto& e : exits) {
      if (name.find(fmt::format("_{}_", e.pid)) != std::string::npos) {
        leaked.push_back(entry.path().string());
        fs::remove(entry.path(), ec);
      }
    }
  }
  return leaked;
}

nlohmann::json reportJson(const Scenario& s, const ScenarioReport& rep,
                          const std::vector<RankExit>& exits,
                          const std::vector<std::optional<RankResult>>& results) {
  nlohmann::json ranks = nlohmann::json::array();
  for (size_t r = 0; r < exits.size(); ++r) {
    const auto& e = exits[r];
    nlohmann::json j = {{"rank", e.rank}, {"pid", e.pid}, {"exit_code", e.exitCode},
                        {"signal", e.signal ? signalName(e.signal) : ""},
                        {"killed_by", e.killedBy}};
    if (results[r]) {
      j["status"] = results[r]->status;
      j["error_type"] = results[r]->errorType;
      j["message"] = results[r]->message;
      j["losses"] = jsonNumbers(results[r]->losses);  // Note [Non-finite numbers in result files]
      if (results[r]->nonFiniteStep >= 0) {
        j["non_finite"] = {{"step", results[r]->nonFiniteStep},
                           {"what", results[r]->nonFiniteWhat}};
      }
      j["param_checksum"] = results[r]->paramChecksum;
      if (!std::isnan(results[r]->probeLossBefore)) {  // Note [Loss on one batch]
        j["probe_loss"] = {{"before", jsonNumber(results[r]->probeLossBefore)},
                           {"after", jsonNumber(results[r]->probeLossAfter)}};
      }
      if (!results[r]->reported.empty()) j["reported"] = jsonSeries(results[r]->reported);
    } else {
      j["status"] = "no report";
    }
    ranks.push_back(j);
  }
  nlohmann::json j = {{"name", s.name},
                      {"file", s.path},
                      {"group", s.group},
                      {"world_size", s.worldSize},
                      {"debug", s.debugLevel},
                      {"expected_outcome", outcomeName(s.expect.outcome)},
                      {"observed_outcome", outcomeName(rep.diagnosis.outcome)},
                      {"culprits", rep.diagnosis.culprits},
                      {"diagnosis", rep.diagnosis.text},
                      {"duration_s", rep.durationS},
                      {"passed", rep.passed},
                      {"failures", rep.failures},
                      {"ranks", ranks}};
  if (rep.diagnosis.detectionS) j["detection_s"] = *rep.diagnosis.detectionS;
  if (!s.faults.empty()) {
    std::vector<std::string> kinds;
    for (const auto& f : s.faults) kinds.push_back(f.kind);
    j["fault_kinds"] = kinds;
  }
  return j;
}

// The debug layer's flight-recorder dumps (fr_rank_<R>.json, written on a
// timeout or error), analysed as `distlab analyze` would; the first
// divergence joins the diagnosis ("flight recorder: NOT_JOINED at seq 2 ...").
void appendFlightRecorderAnalysis(const std::string& dir, int worldSize, Diagnosis& d) {
  std::vector<std::string> dumps;
  for (int r = 0; r < worldSize; ++r) {
    std::string p = fmt::format("{}/fr_rank_{}.json", dir, r);
    if (fs::exists(p)) dumps.push_back(p);
  }
  if (dumps.empty()) return;
  try {
    AnalysisResult a = analyzeDumps(dumps);
    if (!a.foundDivergence()) return;
    const Divergence& v = a.divergences.front();
    d.text += fmt::format("; flight recorder: {} at seq {} ({}), culprits [{}]", v.kind, v.seq,
                          v.op, fmt::join(v.culprits, ","));
  } catch (const std::exception& e) {
    d.text += fmt::format("; flight recorder dumps unreadable: {}", e.what());
  }
}

std::string selfExecutable() {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error("cannot find the distlab executable (/proc/self/exe)");
  return p.string();
}

// The built-in workloads run `distlab scenario-rank`; a program runs itself,
// told about the scenario through the environment (Note [Programs under a
// scenario]).
void setRankCommand(const Scenario& s, const RunOptions& o, const std::string& dir,
                    RankLaunch& l) {
  if (s.workloadKind != "program") {
    l.executable = o.executable.empty() ? selfExecutable() : o.executable;
    l.args = {"scenario-rank", s.path, "--result-dir", dir};
    if (o.trace) l.args.push_back("--trace");
    return;
  }
  const std::string searchPath = readRuntimeEnv().path.value_or("/usr/bin:/bin");
  ResolvedProgram p = resolveProgram(s, o.program, searchPath);
  l.executable = p.argv.front();
  l.args.assign(p.argv.begin() + 1, p.argv.end());
  l.workingDir = p.workingDir;
  l.env = p.env;
  l.env["DISTLAB_SCENARIO"] = fs::absolute(s.path).string();
  l.env["DISTLAB_SCENARIO_RESULT_DIR"] = dir;
  l.env["DISTLAB_SCENARIO_TRACE"] = o.trace ? "1" : "0";
}

void execute(const Scenario& s, const RunOptions& o, const std::string& dir,
             const Stopwatch& watch, ScenarioReport& rep) {
  RankLaunch l;  // the launcher hosts the store (MASTER_ADDR/MASTER_PORT)
  setRankCommand(s, o, dir, l);
  l.env["TORCH_DISTRIBUTED_DEBUG"] = s.debugLevel;
  // Flight-recorder dumps go to the run's folder, not /tmp (Cleanup).
  l.env["TORCH_FR_DUMP_TEMP_FILE"] = dir + "/fr_rank_";
  l.worldSize = s.worldSize;
  l.deadlineS = s.runTimeoutS;
  l.graceS = s.teardownGraceS;
  l.logDir = dir;
  LaunchOutcome launched = launchRanks(l);
  std::vector<std::optional<RankResult>> results;
  std::vector<RankEvents> events;
  for (int r = 0; r < s.worldSize; ++r) {
    std::string path = fmt::format("{}/rank{}.json", dir, r);
    results.push_back(fs::exists(path) ? std::optional<RankResult>(readRankResult(path))
                                       : std::nullopt);
    events.push_back(readRankEvents(fmt::format("{}/rank{}.events", dir, r)));
  }
  rep.diagnosis = diagnose(s, launched.ranks, results, events, wallClockNowUs());
  appendFlightRecorderAnalysis(dir, s.worldSize, rep.diagnosis);
  rep.failures = checkExpectations(s, rep.diagnosis, launched.ranks, results);
  for (auto& f : checkRankOutputs(s, dir)) rep.failures.push_back(std::move(f));
  std::optional<ScenarioTrace> traced;
  try {
    traced = collectScenarioTrace(s, dir, events);
  } catch (const std::exception& e) {
    rep.failures.push_back(fmt::format("{}: the ranks' traces could not be merged: {}", s.path,
                                       e.what()));
  }
  if (rep.diagnosis.outcome == Outcome::kSuccess) {
    for (auto& f : checkOverlapExpectations(s, traced)) rep.failures.push_back(std::move(f));
    for (auto& f : checkPredictedExpectations(s, traced)) rep.failures.push_back(std::move(f));
  }
  if (traced) rep.overlap = traced->byRank;
  for (const auto& r : results) rep.stepMs.push_back(r ? r->stepMs : std::vector<double>{});
  if (launched.leftoverProcesses) {
    rep.failures.push_back(fmt::format("{}: a rank process outlived the run", s.path));
  }
  for (const auto& seg : leakedSegments(launched.ranks)) {
    rep.failures.push_back(fmt::format("{}: shared-memory segment left behind: {}", s.path, seg));
  }
  if (s.workloadKind == "program") {
    for (auto& f : checkProgramRun(s, launched.ranks, results, rep.diagnosis, dir)) {
      rep.failures.push_back(std::move(f));
    }
  }
  // The worker's "bad scenario or environment" exit; a program's exit codes are its own.
  for (int r = 0; r < s.worldSize && s.workloadKind != "program"; ++r) {
    const auto& e = launched.ranks[r];
    if (e.exitCode == 2 || e.exitCode == 127) {
      rep.failures.push_back(fmt::format("{}: rank {} could not start (exit {}); see {}/rank{}.log",
                                         s.path, r, e.exitCode, dir, r));
    }
  }
  rep.passed = rep.failures.empty();
  rep.durationS = watch.elapsedSeconds();
  if (!o.outDir.empty()) {
    nlohmann::json report = reportJson(s, rep, launched.ranks, results);
    if (traced) report["overlap"] = overlapJson(traced->byRank);
    std::ofstream(fmt::format("{}/{}.json", o.outDir, fileStem(s))) << report.dump(2) << "\n";
    const std::string tracePath = fmt::format("{}/{}.trace.json", o.outDir, fileStem(s));
    if (traced) {
      std::ofstream(tracePath) << traced->merged.dump() << "\n";
    } else if (o.trace || s.trace) {
      writeMergedTrace(tracePath, s, events);  // no rank traced (all died early): event logs
    }
  }
  if (o.verbose && !rep.passed) {
    for (int r = 0; r < s.worldSize; ++r) {
      std::ifstream log(fmt::format("{}/rank{}.log", dir, r));
      std::string line, last;
      while (std::getline(log, line)) last = line;
      if (!last.empty()) std::fprintf(stderr, "    rank %d log: %s\n", r, last.c_str());
    }
  }
}

// [expect.step_time_ratio]: runs the comparison configuration right after
// this one (traced alike, so tracing cannot bias the ratio) and checks the
// ratio of the steady step times.
void compareStepTimes(const Scenario& s, const RunOptions& o, const std::string& dir,
                      ScenarioReport& rep) {
  const std::string other = dir + "/comparison.toml";
  std::ofstream(other) << comparisonScenarioText(s.path);
  RunOptions ro;
  ro.executable = o.executable;
  ro.trace = o.trace || s.trace || s.expect.overlap.any();
  ScenarioReport cmp = runScenario(other, ro);
  if (!cmp.passed) {
    rep.failures.push_back(fmt::format("{}: the step_time_ratio comparison run failed: {}",
                                       s.path, cmp.failures.empty() ? "" : cmp.failures.front()));
  }
  for (auto& f : checkStepTimeRatio(s, steadyStepMs(rep.stepMs), steadyStepMs(cmp.stepMs))) {
    if (cmp.passed) rep.failures.push_back(std::move(f));
  }
  rep.passed = rep.failures.empty();
}

}  // namespace

ScenarioReport runScenario(const std::string& path, const RunOptions& o) {
  ScenarioReport rep;
  rep.path = path;
  rep.name = path;
  Stopwatch watch;
  Scenario s;
  try {
    ParseOptions po;
    po.programCommand = o.programCommand;
    s = parseScenarioFile(path, po);
  } catch (const std::exception& e) {  // never stops the other files (a ValueError normally)
    rep.failures.push_back(e.what());
    return rep;
  }
  rep.parsed = true;
  rep.name = s.group + "/" + s.name;
  rep.expected = s.expect.outcome;
  rep.skipped = deviceSkipReason(s);
  if (rep.skipped) return rep;
  std::string dir;
  // $TMPDIR/distlab-scenario-*, removed even when `distlab run` is killed.
  std::optional<GuardedTempDir> temporary;
  if (o.outDir.empty()) {
    temporary.emplace("distlab-scenario-");
    dir = temporary->path();
  } else {
    dir = fmt::format("{}/{}", o.outDir, fileStem(s));
    fs::create_directories(dir);
  }
  try {
    execute(s, o, dir, watch, rep);
    if (rep.passed && s.expect.overlap.stepTimeRatio) compareStepTimes(s, o, dir, rep);
  } catch (const std::exception& e) {
    rep.failures.push_back(fmt::format("{}: the run failed: {}", path, e.what()));
    rep.passed = false;
  }
  temporary.reset();
  rep.durationS = watch.elapsedSeconds();
  return rep;
}

std::vector<std::string> collectScenarioFiles(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const auto& p : paths) {
    if (fs::is_directory(p)) {
      std::vector<std::string> found;
      for (const auto& e : fs::recursive_directory_iterator(p)) {
        if (e.is_regular_file() && e.path().extension() == ".toml") found.push_back(e.path().string());
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(p)) {
      files.push_back(p);
    } else {
      throw ValueError(fmt::format("{}: no such scenario file or folder", p));
    }
  }
  return files;
}

int runScenarios(const std::vector<std::string>& paths, const RunOptions& o) {
  auto files = collectScenarioFiles(paths);
  if (!o.outDir.empty()) fs::create_directories(o.outDir);
  Stopwatch total;
  int passed = 0, failed = 0, skipped = 0, malformed = 0;
  for (const auto& file : files) {
    ScenarioReport rep = runScenario(file, o);
    if (!rep.parsed) {
      ++malformed;
      std::printf("%-5s %s\n", "ERROR", rep.failures.front().c_str());
      std::fflush(stdout);
      continue;
    }
    if (rep.skipped) {
      ++skipped;
      std::printf("%-5s %-42s skipped: %s\n", "SKIP", rep.name.c_str(), rep.skipped->c_str());
      std::fflush(stdout);
      continue;
    }
    rep.passed ? ++passed : ++failed;
    const auto& d = rep.diagnosis;
    std::string text = d.text.empty() ? "-" : d.text;
    for (char& c : text) if (c == '\n') c = ' ';
    std::string detect = d.detectionS ? fmt::format("{:.2f}s", *d.detectionS) : "-";
    std::printf("%-5s %-42s expected %-7s observed %-7s culprits [%s] detect %-6s %6.2fs  %s\n",
                rep.passed ? "PASS" : "FAIL", rep.name.c_str(), outcomeName(rep.expected).c_str(),
                outcomeName(d.outcome).c_str(), fmt::format("{}", fmt::join(d.culprits, ",")).c_str(),
                detect.c_str(), rep.durationS, text.c_str());
    for (const auto& f : rep.failures) std::printf("      %s\n", f.c_str());
    std::fflush(stdout);
  }
  std::printf("%zu scenarios: %d passed, %d failed, %d skipped, %d malformed in %.1f s\n",
              files.size(), passed, failed, skipped, malformed, total.elapsedSeconds());
  if (malformed > 0) return 2;
  if (failed > 0) return 1;
  return skipped > 0 && passed == 0 ? kSkippedExitCode : 0;
}

}  // namespace distlab::emulator
