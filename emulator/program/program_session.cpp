// The state behind distlab::program (program.hpp) and the init hook that
// builds it (Note [Programs under a scenario] in runtime/comm/init_hook.hpp).
#include "emulator/program/program_session.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "emulator/program/program.hpp"
#include "emulator/scenario/rank_session.hpp"
#include "emulator/scenario/scenario_parser.hpp"
#include "runtime/comm/init_hook.hpp"
#include "runtime/data/distributed_sampler.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/autograd/training_observer.hpp"

namespace distlab::emulator {
namespace {

struct ProgramState {
  std::mutex mutex;
  std::unique_ptr<RankSession> session;
  // report() before the process group exists: kept for the result file.
  std::map<std::string, std::vector<double>> earlyReports;
  int lastStep = -1;         // the last marker (program::step)
  bool markersUsed = false;  // markers replace the automatic count
  int automaticStep = -1;    // the last step begun by a DDP/FSDP forward
  int skippedStep = -1;      // the step whose backward a skip_backward fault skipped
  bool unusedRecorded = false;  // the unused_param fault's firing is logged once
};

// Never destroyed: the exit handler and the terminate handler may run while
// static objects are being destroyed.
ProgramState& state() {
  static ProgramState* s = new ProgramState;
  return *s;
}

// An exception that leaves main (or any thread) ends the program here, as an
// uncaught exception ends a Python rank: the rank's result names it, its
// flight recorder dumps, and it exits with 1 (no teardown: peers may be stuck).
[[noreturn]] void recordUncaughtAndExit() {
  std::exception_ptr error = std::current_exception();
  if (!error) {
    error = std::make_exception_ptr(
        Error("std::terminate was called without an active exception (a joinable std::thread "
              "destroyed, a noexcept function that threw, or an explicit call)"));
  }
  RankSession* session = state().session.get();
  if (session) session->recordFailure(error);
  ::_exit(1);
}

// A normal exit: the result says ok (a non-zero exit code still makes the
// rank a crash in the runner's diagnosis), with the trace and reports.
void recordExit() {
  ProgramState& st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  if (!st.session || st.session->recorded()) return;
  st.session->writeTrace();
  st.session->recordSuccess();
}

// Note [Training observer]: without markers, each training forward of a
// DDP or root FSDP module begins the next step.
void onStepBegins() {
  ProgramState& st = state();
  RankSession* session = nullptr;
  int step = 0;
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    if (!st.session || st.markersUsed) return;
    step = ++st.automaticStep;
    session = st.session.get();
  }
  session->plan().beginStep(step);  // outside the lock: a hang fault blocks here
}

// The session and the current step (markers win over the automatic count);
// nullptr before the process group exists.
RankSession* sessionAndStep(int& step) {
  ProgramState& st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  step = st.markersUsed ? st.lastStep : st.automaticStep;
  return st.session.get();
}

// The synchronised gradients of the current step are in .grad: a bit_flip
// fault of this step flips one of its bits.
void onGradientsReady(const std::vector<Tensor>& params) {
  int step = 0;
  if (RankSession* session = sessionAndStep(step)) {
    session->plan().applyGradientFaults(step, params);
  }
}

// A skip_backward fault of the current step skips every backward of that
// step (gradient accumulation included); its firing is logged once.
bool onBackward() {
  int step = 0;
  RankSession* session = sessionAndStep(step);
  if (!session) return false;
  const FaultSpec* f = session->plan().engineFault("skip_backward", step);
  if (!f) return false;
  ProgramState& st = state();
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    first = st.skippedStep != step;
    st.skippedStep = step;
  }
  if (first) session->plan().recordFired(*f, 0, "backward skipped");
  return true;
}

// An unused_param fault leaves its parameter (default: the module's last)
// out of every DDP training forward of this rank.
std::vector<std::string> onParametersLeftUnused(
    const std::function<std::vector<std::string>()>& parameterNames) {
  int step = 0;
  RankSession* session = sessionAndStep(step);
  if (!session) return {};
  const FaultSpec* f = session->plan().engineFault("unused_param", -1);
  if (!f) return {};
  const std::vector<std::string> names = parameterNames();
  if (names.empty()) return {};
  const std::string chosen = f->parameter.empty() ? names.back() : f->parameter;
  if (std::find(names.begin(), names.end(), chosen) == names.end()) {
    throw ValueError(fmt::format("{}:{}: unused_param: parameter = \"{}\" is not a parameter of "
                                 "the DDP module that requires grad; its parameters: {}",
                                 session->scenario().path, f->pos.line, chosen,
                                 fmt::join(names, ", ")));
  }
  ProgramState& st = state();
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    first = !st.unusedRecorded;
    st.unusedRecorded = true;
  }
  if (first) session->plan().recordFired(*f, 0, fmt::format("{} left out of the forward", chosen));
  return {chosen};
}

// Note [Uneven shares under a scenario]: an uneven_data fault of this rank
// grows every DistributedSampler built from now on.
int64_t extraSamplesOfThisRank() {
  ProgramState& st = state();
  RankSession* session = nullptr;
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    session = st.session.get();
  }
  if (!session) return 0;
  const FaultSpec* f = session->plan().engineFault("uneven_data", -1);
  if (!f) return 0;
  session->plan().recordFired(*f, 0, fmt::format("{} extra samples", f->extraSamples));
  return f->extraSamples;
}

void prepare(comm::InitOptions& options, const RuntimeEnv& env) {
  ProgramState& st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  if (st.session) {
    throw ValueError(
        "initProcessGroup: under `distlab run` a program creates its default process group "
        "once; a second initialization (after destroyProcessGroup) is not supported there");
  }
  ParseOptions po;
  po.programCommand = {"(this program)"};  // the runner resolved and started it
  Scenario s = parseScenarioFile(env.scenarioFile, po);
  const int rank = env.requiredRank();
  if (env.requiredWorldSize() != s.worldSize) {
    throw ValueError(fmt::format("WORLD_SIZE={} but {} has world_size = {}",
                                 env.requiredWorldSize(), env.scenarioFile, s.worldSize));
  }
  // The scenario describes the cluster: its backend and timeout win.
  options.backend = s.backend;
  options.timeout = millisecondsFromSeconds(s.collectiveTimeoutS);
  st.session = std::make_unique<RankSession>(std::move(s), rank, env.scenarioResultDir,
                                             env.scenarioTrace);
  for (auto& [name, values] : st.earlyReports) {
    auto& into = st.session->result().reported[name];
    into.insert(into.end(), values.begin(), values.end());
  }
  st.earlyReports.clear();
  // A step marked before the group existed counts (its step faults fire at
  // the next marker: nothing can be injected before the group exists).
  if (st.lastStep >= 0) st.session->plan().setStep(st.lastStep);
  setTrainingObserver({onStepBegins, onGradientsReady, onBackward, onParametersLeftUnused});
  data::setExtraSamplesSource(extraSamplesOfThisRank);
  std::set_terminate(recordUncaughtAndExit);
}

std::shared_ptr<comm::Store> wrapStore(std::shared_ptr<comm::Store> store, int, int worldSize) {
  ProgramState& st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  st.session->startTrace(*store, worldSize);  // clock alignment on the plain store, as the worker
  // Registered after the trace's process-wide state exists, so that it is
  // destroyed after this handler has written the trace (exit handlers and
  // static destructors run in the reverse order of their registration).
  std::atexit(recordExit);
  return st.session->wrapStore(std::move(store));
}

bool validReportName(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
}

}  // namespace

void installProgramInitHook() {
  comm::InitHook hook;
  hook.prepare = prepare;
  hook.wrapStore = wrapStore;
  comm::setInitHook(std::move(hook));
}

}  // namespace distlab::emulator

namespace distlab::program {

using emulator::state;
using emulator::validReportName;

bool underScenario() {
  auto& st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  return st.session != nullptr;
}

void step(int step) {
  auto& st = state();
  emulator::RankSession* session = nullptr;
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    if (step < 0 || step < st.lastStep) {
      throw ValueError(fmt::format("distlab::program::step({}): steps start at 0 and never go "
                                   "back (the last one was {})",
                                   step, st.lastStep));
    }
    st.lastStep = step;
    st.markersUsed = true;
    session = st.session.get();  // lives until the process ends once created
  }
  // Outside the lock: a hang fault blocks here, and report() must not.
  if (session) session->plan().beginStep(step);
}

void report(const std::string& name, double value) {
  if (!validReportName(name)) {
    throw ValueError(fmt::format("distlab::program::report: name '{}' must be non-empty "
                                 "letters, digits, '_', '.' or '-'", name));
  }
  auto& st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  auto& series = st.session ? st.session->result().reported : st.earlyReports;
  series[name].push_back(value);
}

}  // namespace distlab::program
