// [[faults]] and [expect] parsing, with the cross checks that need the
// workload (a fault at a sequence number or step that never runs).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "emulator/scenario/scenario_parser.hpp"
#include "emulator/scenario/scenario_parts.hpp"

namespace distlab::emulator {

namespace detail {
namespace {

// Keys each kind accepts besides `kind` and `ranks`.
const std::map<std::string, std::set<std::string>>& kindKeys() {
  static const std::map<std::string, std::set<std::string>> table = {
      {"hang", {"at_seq", "at_step", "on", "peer", "duration", "in_flight"}},
      {"crash", {"at_seq", "at_step", "on", "peer", "mode", "exit_code"}},
      {"straggler", {"at_seq", "at_step", "on", "peer", "delay_ms", "count"}},
      {"mismatch", {"at_seq", "at_step", "on", "peer", "mismatch"}},
      {"skip_collective", {"at_seq", "at_step", "on", "peer"}},
      {"extra_collective", {"at_seq", "at_step", "on", "peer"}},
      {"skip_backward", {"at_step"}},
      {"unused_param", {"parameter"}},
      {"uneven_data", {"extra_batches", "extra_samples"}},
      {"bit_flip", {"at_step", "bit"}},
      {"store_death", {"at_seq", "at_step"}},
      {"slow_store", {"delay_ms"}},
  };
  return table;
}

bool isEngineFault(const std::string& kind) {
  return kind == "skip_backward" || kind == "unused_param" || kind == "uneven_data" ||
         kind == "bit_flip";
}
bool isStoreFault(const std::string& kind) {
  return kind == "store_death" || kind == "slow_store";
}

// Engine faults on a user's program act through distlab's DDP and FSDP
// (Note [Training observer]): skip_backward at the step's backward, a bit
// flip in the synchronised gradients, unused_param through DDP's forward
// (`parameter`, default the last one), uneven data through its
// DistributedSampler (`extra_samples`).
void checkEngineFaultWorkload(const TomlReader& r, const toml::table& t, const Scenario& s,
                              const FaultSpec& f) {
  const bool program = s.workloadKind == "program";
  if (!program && t.contains("parameter")) {
    r.fail(r.lineOfKey(t, "parameter"),
           "parameter names one of a program's parameters; a training workload's unused_param "
           "leaves its model's auxiliary head out (remove parameter)");
  }
  if (f.kind != "uneven_data") return;
  if (program && !t.contains("extra_samples")) {
    r.fail(f.pos.line, "uneven_data on a program needs extra_samples = N: the samples its "
                       "DistributedSampler adds to the rank's share (extra_batches is for "
                       "training workloads)");
  }
  if (program && t.contains("extra_batches")) {
    r.fail(r.lineOfKey(t, "extra_batches"), "a program's uneven data is counted in samples: use "
                                            "extra_samples");
  }
  if (!program && t.contains("extra_samples")) {
    r.fail(r.lineOfKey(t, "extra_samples"), "extra_samples is for programs (their "
                                            "DistributedSampler); a training workload takes "
                                            "extra_batches");
  }
}

void checkTrigger(const TomlReader& r, const toml::table& t, const Scenario& s, FaultSpec& f) {
  const bool training = s.workloadKind == "training";
  // A program's steps come from its markers (emulator/program/program.hpp);
  // how many it runs is unknown here, so no "never runs" check applies.
  const bool program = s.workloadKind == "program";
  if (t.get("at_seq") && t.get("at_step")) {
    r.fail(f.pos.line, "give either at_seq or at_step, not both");
  }
  if (auto v = r.intInRange(t, "at_seq", 1, int64_t{1} << 40)) f.atSeq = static_cast<uint64_t>(*v);
  if (auto v = r.intInRange(t, "at_step", 0, 1000000)) f.atStep = static_cast<int>(*v);
  bool needsTrigger = f.kind != "unused_param" && f.kind != "uneven_data" &&
                      f.kind != "slow_store";
  if (needsTrigger && f.atSeq == 0 && f.atStep < 0) {
    r.fail(f.pos.line, fmt::format("fault '{}' needs a trigger: at_seq = N (collective "
                                   "sequence number, or the n-th send/recv with on = "
                                   "\"send\"|\"recv\", from 1){}", f.kind,
                                   training || program ? " or at_step = N (training step, from 0)"
                                                       : ""));
  }
  if (f.atStep >= 0 && !training && !program) {
    r.fail(r.lineOfKey(t, "at_step"), "at_step needs a training workload; use at_seq");
  }
  checkEngineFaultWorkload(r, t, s, f);
  if (isEngineFault(f.kind) && !training && !program) {
    r.fail(f.pos.line, fmt::format("fault '{}' needs a training workload", f.kind));
  }
  if (f.atStep >= 0 && training) {
    for (int rank : f.ranks) {
      if (f.atStep >= s.training.batchesOf(rank)) {
        r.fail(r.lineOfKey(t, "at_step"),
               fmt::format("at_step = {} never runs on rank {}: it trains {} steps (0..{})",
                           f.atStep, rank, s.training.batchesOf(rank),
                           s.training.batchesOf(rank) - 1));
      }
    }
  }
  if (f.atSeq > 0 && !training && !program && f.on.empty()) {
    for (int rank : f.ranks) {
      uint64_t n = worldCollectiveCount(s, rank);
      if (f.atSeq > n) {
        r.fail(r.lineOfKey(t, "at_seq"),
               fmt::format("at_seq = {} never runs on rank {}: it issues {} collectives on the "
                           "world group (seq 1..{})", f.atSeq, rank, n, n));
      }
    }
  }
}

// in_flight = true (Note [A hang in flight] in emulator/faults/stream_stall.hpp):
// a collective on a backend that serves CUDA tensors itself, at a sequence number.
void checkInFlightHang(const TomlReader& r, const toml::table& t, const Scenario& s,
                       FaultSpec& f) {
  if (auto v = r.boolean(t, "in_flight")) f.inFlight = *v;
  if (!f.inFlight) return;
  const int line = r.lineOfKey(t, "in_flight");
  if (s.backend != "nccl") {
    r.fail(line, fmt::format("in_flight = true stalls the device stream a collective runs on; "
                             "it needs backend = \"nccl\" and device = \"cuda\" (backend "
                             "'{}' stages CUDA tensors through the host; drop in_flight there)",
                             s.backend));
  }
  if (f.atSeq == 0 || !f.on.empty()) {
    r.fail(line, "in_flight = true needs at_seq = N (a collective on the world group), without "
                 "on = \"send\"|\"recv\"");
  }
}

void readPointToPointKeys(const TomlReader& r, const toml::table& t, const Scenario& s,
                          FaultSpec& f) {
  if (auto v = r.choice(t, "on", {"send", "recv"})) f.on = *v;
  if (auto v = r.intInRange(t, "peer", 0, s.worldSize - 1)) f.peer = static_cast<int>(*v);
  if (f.on.empty() && f.peer >= 0) {
    r.fail(r.lineOfKey(t, "peer"), "peer needs on = \"send\" or \"recv\"");
  }
}

// `on = "send"|"recv"` and `peer` (Note [Point-to-point triggers] in
// emulator/faults/fault_plan.hpp), checked against the workload: the n-th
// send or recv must exist on every rank of the fault.
void checkPointToPointTrigger(const TomlReader& r, const toml::table& t, const Scenario& s,
                              const FaultSpec& f) {
  if (f.on.empty()) return;
  const int line = r.lineOfKey(t, "on");
  if (s.workloadKind == "training") {
    r.fail(line, fmt::format("on = \"{}\" needs a workload that issues {}s (a collective "
                             "script or a program); the training workload issues no "
                             "point-to-point operation",
                             f.on, f.on));
  }
  const auto& allowed = kPointToPointMismatches;
  if (f.kind == "mismatch" &&
      std::find(allowed.begin(), allowed.end(), f.mismatch) == allowed.end()) {
    r.fail(r.lineOfKey(t, "mismatch"),
           fmt::format("mismatch = \"{}\" has no point-to-point form; on a {} use {}",
                       f.mismatch, f.on, fmt::join(allowed, " or ")));
  }
  if (f.atSeq == 0 || s.workloadKind == "program") return;
  const std::string counted = f.peer >= 0 ? fmt::format("{}s with peer {}", f.on, f.peer)
                                          : fmt::format("{}s", f.on);
  for (int rank : f.ranks) {
    const uint64_t n = pointToPointCount(s, rank, f.on, f.peer);
    if (f.atSeq > n) {
      r.fail(r.lineOfKey(t, "at_seq"),
             fmt::format("at_seq = {} never runs on rank {}: it issues {} {} on the world group",
                         f.atSeq, rank, n, counted));
    }
  }
}

void readKindParams(const TomlReader& r, const toml::table& t, FaultSpec& f) {
  // A hang past the longest run_timeout (600 s) is a hang forever: omit
  // `duration` for that.
  if (auto v = r.number(t, "duration", NumRange{0, 3600, true, " s (omit: forever)"})) {
    f.durationS = *v;
  }
  if (auto v = r.number(t, "delay_ms", NumRange{0, 600000, true, " ms"})) f.delayMs = *v;
  if ((f.kind == "straggler" || f.kind == "slow_store") && f.delayMs <= 0) {
    r.fail(f.pos.line, fmt::format("fault '{}' needs delay_ms", f.kind));
  }
  if (auto v = r.intInRange(t, "count", 1, 1000000)) f.count = static_cast<int>(*v);
  if (auto v = r.choice(t, "mode", {"exit", "abort", "sigkill"})) f.crashMode = *v;
  if (auto v = r.intInRange(t, "exit_code", 1, 255)) f.exitCode = static_cast<int>(*v);
  if (auto v = r.choice(t, "mismatch", {"shape", "dtype", "op", "reduce_op", "root",
                                        "tensor_count"})) {
    f.mismatch = *v;
  }
  if (f.kind == "mismatch" && f.mismatch.empty()) {
    r.fail(f.pos.line, "fault 'mismatch' needs mismatch = shape | dtype | op | reduce_op | "
                       "root | tensor_count");
  }
  if (auto v = r.intInRange(t, "extra_batches", 1, 1000)) f.extraBatches = static_cast<int>(*v);
  if (auto v = r.intInRange(t, "extra_samples", 1, 1000000)) f.extraSamples = static_cast<int>(*v);
  if (auto v = r.intInRange(t, "bit", 0, 63)) f.bit = static_cast<int>(*v);
  if (auto v = r.str(t, "parameter")) {
    if (v->empty()) r.fail(r.lineOfKey(t, "parameter"), "parameter must name a parameter of the "
                                                          "DDP module (\"fc2.bias\"), not be empty");
    f.parameter = *v;
  }
}

}  // namespace

void parseFaults(const TomlReader& r, const toml::table& root, Scenario& s) {
  const toml::node* faults = root.get("faults");
  if (!faults) return;
  if (!faults->is_array_of_tables()) r.fail(*faults, "faults must be written as [[faults]] tables");
  for (const auto& node : *faults->as_array()) {
    const auto& t = *node.as_table();
    FaultSpec f;
    f.pos = r.posOf(t);
    auto kind = r.choice(t, "kind", kFaultKinds);
    if (!kind) r.fail(t, fmt::format("missing required key 'kind' in [[faults]]; kinds: {}",
                                     fmt::join(kFaultKinds, ", ")));
    f.kind = *kind;
    std::set<std::string> known = kindKeys().at(f.kind);
    known.insert("kind");
    known.insert("ranks");
    r.checkKeys(t, fmt::format("[[faults]] of kind '{}'", f.kind), known);
    if (auto rk = r.ranks(t, "ranks", s.worldSize)) f.ranks = *rk;
    if (f.ranks.empty()) {
      if (!isStoreFault(f.kind)) r.fail(f.pos.line, fmt::format("fault '{}' needs ranks = [..]",
                                                                f.kind));
      for (int q = 0; q < s.worldSize; ++q) f.ranks.push_back(q);
    }
    readKindParams(r, t, f);
    if (f.kind == "unused_param" && s.training.model == "gpt") {
      // GPT has no auxiliary head to leave out (training_model.hpp), and every
      // one of its parameters reaches the logits: refused, never ignored.
      r.fail(f.pos.line, "fault 'unused_param' skips the auxiliary head of the mlp, "
                         "residual_mlp and two_layer models; model = \"gpt\" has none (use "
                         "one of those models for this fault)");
    }
    if (f.kind == "uneven_data" && s.workloadKind == "training") {
      for (int rank : f.ranks) s.training.batchesPerRank[rank] =
          s.training.batchesOf(rank) + f.extraBatches;
    }
    readPointToPointKeys(r, t, s, f);  // the trigger's count depends on them
    checkTrigger(r, t, s, f);
    checkPointToPointTrigger(r, t, s, f);
    checkInFlightHang(r, t, s, f);
    s.faults.push_back(std::move(f));
  }
}

}  // namespace detail
}  // namespace distlab::emulator
