#pragma once
// What a rank runs, as the scenario parser fills it from [workload]
// (scenarios/README.md): a collective script (CollectiveStep) or a training run
// (TrainingWorkload). This room's drivers (workloads.hpp) read them; the
// scenario room's Scenario (emulator/scenario/scenario.hpp) holds them, so
// they live here, below it. Every element remembers where it came from
// (`SourcePos`, emulator/faults/source_pos.hpp) for `file:line` errors.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "emulator/faults/source_pos.hpp"
#include "runtime/tensor/dtype.hpp"

namespace distlab::emulator {

// One step of a collective script. `op` is one of kCollectiveOps (below).
struct CollectiveStep {
  std::string op = "all_reduce";
  int64_t numel = 1024;        // elements of each rank's input (per tensor)
  DType dtype = DType::kFloat32;
  std::string reduceOp = "sum";
  int root = 0;                // broadcast/reduce/gather/scatter root; send/recv peer
  int tensors = 1;             // all_reduce_coalesced: number of tensors
  std::vector<int> group;      // subgroup (global ranks); empty: the world
  std::vector<int> ranks;      // ranks that issue the step; empty: every member
  int repeat = 1;              // issue the step this many times
  double computeMs = 0;        // op = "compute": sleep this long (emulated compute)
  bool async = false;          // issue and go on; op = "wait" waits for it (DDP's buckets)
  bool waitAllRanks = false;   // op = "monitored_barrier": name every missing rank
  std::map<int, CollectiveStep> perRank;  // fields overridden on one rank
  SourcePos pos;

  const CollectiveStep& forRank(int rank) const {
    auto it = perRank.find(rank);
    return it == perRank.end() ? *this : it->second;
  }
  bool issuedBy(int rank) const;       // honours `ranks` and `group`
  bool countsOnWorld() const;          // a world-group collective (has a seq)
};

// Collective-script operations, spelled as torch.distributed spells them (for
// ProcessGroup operations, the API column of runtime/comm/op_names.hpp, Note
// [Op names]), plus distlab's `compute`, which sleeps (a "compute" trace span),
// and `wait`, which waits for every collective issued with `async = true`
// since the last wait (a "wait" span, as DDP's wait for its buckets). `new_group` creates the
// step's group (a store round trip), send/recv pair with `root` as the peer,
// `monitored_barrier` is the store-based barrier that names ranks that never
// arrive (no collective sequence number).
extern const std::vector<std::string> kCollectiveOps;

// The PyTorch name of an op that scenario files once spelled distlab's way
// ("allreduce" -> "all_reduce"), so the parser can name the new spelling;
// nullopt for any other text.
std::optional<std::string_view> renamedCollectiveOp(std::string_view op);

// The GPT of a training run (model = "gpt"; runtime/nn/models/gpt.hpp):
// `gpt = { vocab, block, embd, heads, layers, tied }` in [workload].
struct GptWorkload {
  int64_t vocab = 64;   // vocabulary size (token ids 0..vocab-1)
  int64_t block = 16;   // tokens per sequence (the context length)
  int64_t embd = 32;    // embedding width; a multiple of heads
  int64_t heads = 2;
  int64_t layers = 2;   // transformer blocks h.0 .. h.<layers-1>
  bool tied = false;    // lm_head reuses wte.weight

  // The accepted ranges (the scenario parser and `bench overlap --gpt`).
  static constexpr int64_t kMinVocab = 2, kMaxVocab = 65536, kMaxBlock = 4096,
                           kMaxEmbd = 4096, kMaxHeads = 256, kMaxLayers = 64;
};

// Emulated compute per Linear layer (layer_compute = { forward_ms,
// backward_ms }; Note [Emulated layer compute] in layer_compute.hpp).
struct LayerCompute {
  double forwardMs = 0;
  double backwardMs = 0;
  bool any() const { return forwardMs > 0 || backwardMs > 0; }
  static constexpr double kMaxMs = 60000;  // one minute, as a script's compute_ms
};

// A training run (model, engine, data, steps). Engines come from the engine
// registry (engine_registry.hpp), so new engines need no runner change.
struct TrainingWorkload {
  std::string model = "mlp";   // mlp | residual_mlp | two_layer | gpt
  std::vector<int64_t> sizes{16, 32, 4};  // model sizes (see models in workloads)
  GptWorkload gpt;             // model = "gpt" only
  LayerCompute layerCompute;   // none by default
  std::string engine = "local";
  std::map<std::string, std::string> engineOptions;  // validated by the engine
  std::string commHook;        // "" = the engine's default
  std::string optimizer = "sgd";
  double lr = 0.05;
  int steps = 5;
  int batchSize = 8;
  std::map<int, int> batchesPerRank;  // rank -> number of batches (default: steps)
  int noSyncEvery = 0;         // accumulate k-1 steps under no_sync, sync every k
  uint64_t seed = 1234;
  // Uneven inputs: the loop runs inside join::Join over the engine (and ZeRO).
  bool join = false;
  bool throwOnEarlyTermination = false;
  bool divideByInitialWorldSize = true;
  // "none" | "zero" (ZeroRedundancyOptimizer around `optimizer`).
  std::string optimizerSharding = "none";
  bool overlapWithDdp = false;
  bool parametersAsBucketView = false;
  SourcePos pos;
  int batchesOf(int rank) const {
    auto it = batchesPerRank.find(rank);
    return it == batchesPerRank.end() ? steps : it->second;
  }
};

// A user's own program (kind = "program"; Note [Programs under a scenario] in
// runtime/comm/init_hook.hpp): started once per rank with torchrun's
// environment; the scenario's faults, link model, debug level and tracing
// reach it through initProcessGroup's init hook.
struct ProgramWorkload {
  // argv as written: command[0] is a path relative to the scenario file's
  // folder when it holds a '/', else looked up in PATH (the runner resolves
  // it, or replaces it with `distlab run --program`).
  std::vector<std::string> command;
  std::map<std::string, std::string> env;  // added to every rank's environment
  std::string cwd;                         // relative to the scenario's folder; "": that folder
  SourcePos pos;
};

// Variables the runner sets for a program's ranks: a scenario's `env` may
// not set them (the cluster, debug level and scenario say what they are).
extern const std::vector<std::string> kRunnerOwnedEnvVars;

}  // namespace distlab::emulator
