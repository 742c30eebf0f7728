// [workload] parsing: collective scripts and training runs.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <limits>

#include "emulator/scenario/scenario_parts.hpp"
#include "emulator/workloads/engine_registry.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::emulator::detail {

namespace {

const std::set<std::string> kStepKeys = {"op", "size", "numel", "dtype", "reduce_op", "root",
                                         "peer", "tensors", "group", "ranks", "repeat",
                                         "compute_ms", "wait_all_ranks", "async", "per_rank"};

// An op in distlab's old spelling ("allreduce") is refused with its PyTorch
// name, which the plain list of valid ops would leave the reader to guess.
void refuseOldSpelling(const TomlReader& r, const toml::table& t) {
  const auto op = r.str(t, "op");
  if (!op) return;
  if (const auto renamed = renamedCollectiveOp(*op)) {
    r.fail(r.lineOfKey(t, "op"),
           fmt::format("op = \"{}\" is spelled \"{}\" (PyTorch's name)", *op, *renamed));
  }
}

// Reads the fields of `t` into `step` (a copy of the base step for per_rank).
void readStepFields(const TomlReader& r, const toml::table& t, const Scenario& s,
                    CollectiveStep& step) {
  refuseOldSpelling(r, t);
  if (auto op = r.choice(t, "op", kCollectiveOps)) step.op = *op;
  if (auto d = r.str(t, "dtype")) {
    try {
      step.dtype = parseDType(*d);
    } catch (const ValueError& e) {
      r.fail(r.lineOfKey(t, "dtype"), e.what());
    }
  }
  if (auto n = r.intInRange(t, "numel", 0, kMaxScenarioElements)) step.numel = *n;
  if (auto n = r.byteSize(t, "size", step.dtype)) step.numel = *n;
  if (auto op = r.str(t, "reduce_op")) {
    static const std::vector<std::string> ops = {"sum", "avg", "product", "min", "max",
                                                 "band", "bor", "bxor"};
    r.choice(t, "reduce_op", ops);
    step.reduceOp = *op;
  }
  if (auto v = r.intInRange(t, "root", 0, s.worldSize - 1)) step.root = static_cast<int>(*v);
  if (auto v = r.intInRange(t, "peer", 0, s.worldSize - 1)) step.root = static_cast<int>(*v);
  if (auto v = r.intInRange(t, "tensors", 1, 64)) step.tensors = static_cast<int>(*v);
  if (auto v = r.ranks(t, "group", s.worldSize)) step.group = *v;
  if (auto v = r.ranks(t, "ranks", s.worldSize)) step.ranks = *v;
  if (auto v = r.intInRange(t, "repeat", 1, 100000)) step.repeat = static_cast<int>(*v);
  if (auto v = r.number(t, "compute_ms", NumRange{0, 60000, false, " ms"})) step.computeMs = *v;
  if (auto v = r.boolean(t, "wait_all_ranks")) step.waitAllRanks = *v;
  if (auto v = r.boolean(t, "async")) step.async = *v;
}

void checkStep(const TomlReader& r, const CollectiveStep& step, int line, int worldSize) {
  int groupSize = step.group.empty() ? worldSize : static_cast<int>(step.group.size());
  bool rooted = step.op == "broadcast" || step.op == "reduce" || step.op == "gather" ||
                step.op == "scatter";
  if (rooted && step.root >= groupSize) {
    r.fail(line, fmt::format("root {} is outside the step's group of {} ranks", step.root,
                             groupSize));
  }
  if ((step.op == "send" || step.op == "recv") && step.ranks.size() != 1) {
    r.fail(line, fmt::format("'{}' needs exactly one issuing rank: ranks = [r]", step.op));
  }
  if (step.op == "compute" && step.computeMs <= 0) {
    r.fail(line, "op = \"compute\" needs compute_ms > 0");
  }
  if (step.op == "new_group" && step.group.empty()) {
    r.fail(line, "op = \"new_group\" needs group = [ranks...]");
  }
  if (step.waitAllRanks && step.op != "monitored_barrier") {
    r.fail(line, "'wait_all_ranks' only applies to op = \"monitored_barrier\"");
  }
  static const std::set<std::string> notAsync = {"compute", "wait", "new_group",
                                                 "monitored_barrier", "send", "recv"};
  if (step.async && notAsync.count(step.op)) {
    r.fail(line, fmt::format("'async' does not apply to op = \"{}\" (only to collectives)",
                             step.op));
  }
}

// A numeric engine option: finite, and inside the range the engine declares.
void checkEngineNumber(const TomlReader& r, const EngineInfo& engine, const toml::table& opts,
                       const std::string& key) {
  auto it = engine.optionRanges.find(key);
  const auto [lo, hi] = it == engine.optionRanges.end()
                            ? std::pair{-std::numeric_limits<double>::max(),
                                        std::numeric_limits<double>::max()}
                            : it->second;
  r.number(opts, key, NumRange{lo, hi});
}

// model = "gpt": the `gpt` table (defaults: GptWorkload); model and sizes
// keys that do not fit the model are refused.
void parseGptShape(const TomlReader& r, const toml::table& w, TrainingWorkload& tr) {
  const bool gpt = tr.model == "gpt";
  if (gpt && w.get("sizes")) {
    r.fail(r.lineOfKey(w, "sizes"), "'sizes' does not apply to model = \"gpt\"; give its shape "
                                    "as gpt = { vocab, block, embd, heads, layers, tied }");
  }
  const toml::table* t = r.table(w, "gpt");
  if (!t) return;
  if (!gpt) {
    r.fail(r.lineOfKey(w, "gpt"),
           fmt::format("'gpt' needs model = \"gpt\" (model is '{}')", tr.model));
  }
  r.checkKeys(*t, "gpt", {"vocab", "block", "embd", "heads", "layers", "tied"});
  GptWorkload& g = tr.gpt;
  if (auto v = r.intInRange(*t, "vocab", GptWorkload::kMinVocab, GptWorkload::kMaxVocab)) {
    g.vocab = *v;
  }
  if (auto v = r.intInRange(*t, "block", 1, GptWorkload::kMaxBlock)) g.block = *v;
  if (auto v = r.intInRange(*t, "embd", 1, GptWorkload::kMaxEmbd)) g.embd = *v;
  if (auto v = r.intInRange(*t, "heads", 1, GptWorkload::kMaxHeads)) g.heads = *v;
  if (auto v = r.intInRange(*t, "layers", 1, GptWorkload::kMaxLayers)) g.layers = *v;
  if (auto v = r.boolean(*t, "tied")) g.tied = *v;
  if (g.embd % g.heads != 0) {
    r.fail(r.lineOfKey(*t, "embd"),
           fmt::format("gpt: embd = {} must be a multiple of heads = {}", g.embd, g.heads));
  }
}

}  // namespace

void parseCollectiveWorkload(const TomlReader& r, const toml::table& w, Scenario& s) {
  r.checkKeys(w, "[workload] (kind = \"collectives\")", {"kind", "steps", "iterations"});
  if (auto v = r.intInRange(w, "iterations", 1, 100000)) s.iterations = static_cast<int>(*v);
  const toml::node* steps = w.get("steps");
  if (!steps || !steps->is_array_of_tables() || steps->as_array()->empty()) {
    r.fail(steps ? *steps : static_cast<const toml::node&>(w),
           "a collective workload needs at least one [[workload.steps]] table");
  }
  for (const auto& node : *steps->as_array()) {
    const auto& t = *node.as_table();
    r.checkKeys(t, "[[workload.steps]]", kStepKeys);
    CollectiveStep step;
    step.pos = r.posOf(t);
    if (!t.get("op")) r.fail(t, "missing required key 'op' in [[workload.steps]]");
    readStepFields(r, t, s, step);
    checkStep(r, step, step.pos.line, s.worldSize);
    if (const toml::table* pr = r.table(t, "per_rank")) {
      for (const auto& [key, value] : *pr) {
        const int rank = r.rankKey(key, s.worldSize, "per_rank key");
        if (!value.is_table()) r.fail(value, "per_rank entries must be tables");
        r.checkKeys(*value.as_table(), "per_rank", {"op", "size", "numel", "dtype", "reduce_op",
                                                    "root", "peer", "tensors", "compute_ms"});
        CollectiveStep over = step;
        over.perRank.clear();
        readStepFields(r, *value.as_table(), s, over);
        step.perRank[rank] = over;
      }
    }
    s.steps.push_back(std::move(step));
  }
}

// `key` may only be set together with `needed` (named in the message).
void requireWith(const TomlReader& r, const toml::table& w, const std::string& key, bool ok,
                 const std::string& needed) {
  if (w.get(key) && !ok) {
    r.fail(r.lineOfKey(w, key), fmt::format("'{}' needs {}", key, needed));
  }
}

// overlap_with_ddp = true: ZeRO stepped by hookWithZeroStep around DDP's
// allreduce hook (runtime/zero/zero_ddp_hook.hpp), which needs DDP to rebuild
// its buckets and is not a Join participant.
void checkOverlapWithDdp(const TomlReader& r, const toml::table& w, const TrainingWorkload& tr) {
  const int line = r.lineOfKey(w, "overlap_with_ddp");
  if (tr.engine != "ddp") {
    r.fail(line, fmt::format("overlap_with_ddp = true needs engine = \"ddp\" (engine is '{}')",
                             tr.engine));
  }
  if (!tr.commHook.empty() && tr.commHook != "none" && tr.commHook != "allreduce") {
    r.fail(line, fmt::format("overlap_with_ddp = true wraps DDP's allreduce hook; comm_hook must "
                             "be \"none\" or \"allreduce\" (is '{}')", tr.commHook));
  }
  if (tr.join) {
    r.fail(line, "overlap_with_ddp = true cannot be combined with join = true (the overlapped "
                 "ZeRO step is not a Join participant); set one of them to false");
  }
  auto option = [&](const char* key) {
    auto it = tr.engineOptions.find(key);
    return it != tr.engineOptions.end() && it->second == "true";
  };
  if (option("find_unused_parameters") && !option("static_graph")) {
    r.fail(line, "overlap_with_ddp = true needs DDP to rebuild its buckets, which it never does "
                 "with find_unused_parameters = true; set static_graph = true or "
                 "find_unused_parameters = false in engine_options");
  }
}

// join, throw_on_early_termination, divide_by_initial_world_size,
// optimizer_sharding, overlap_with_ddp, parameters_as_bucket_view.
void parseJoinAndSharding(const TomlReader& r, const toml::table& w, const EngineInfo& engine,
                          TrainingWorkload& tr) {
  if (auto v = r.boolean(w, "join")) tr.join = *v;
  if (tr.join && !engine.joinable) {
    r.fail(r.lineOfKey(w, "join"),
           fmt::format("join = true needs a Joinable engine; engine '{}' is not (use engine = "
                       "\"ddp\" or \"fsdp\")", tr.engine));
  }
  requireWith(r, w, "throw_on_early_termination", tr.join, "join = true");
  requireWith(r, w, "divide_by_initial_world_size", tr.join, "join = true");
  if (auto v = r.boolean(w, "throw_on_early_termination")) tr.throwOnEarlyTermination = *v;
  if (auto v = r.boolean(w, "divide_by_initial_world_size")) tr.divideByInitialWorldSize = *v;
  if (auto v = r.choice(w, "optimizer_sharding", {"none", "zero"})) tr.optimizerSharding = *v;
  const bool zero = tr.optimizerSharding == "zero";
  if (zero && !engine.distributed) {
    r.fail(r.lineOfKey(w, "optimizer_sharding"),
           fmt::format("optimizer_sharding = \"zero\" needs a distributed engine; engine '{}' "
                       "is not (use engine = \"ddp\")", tr.engine));
  }
  if (tr.join && tr.engine == "fsdp" && tr.noSyncEvery > 0) {
    r.fail(r.lineOfKey(w, "no_sync_every"),
           "no_sync_every cannot be combined with engine = \"fsdp\" and join = true (a joined "
           "rank replays its last iteration's collectives, so the peers' iterations must all "
           "synchronise); remove no_sync_every or join");
  }
  if (zero && tr.join && tr.engine == "fsdp") {
    r.fail(r.lineOfKey(w, "optimizer_sharding"),
           "optimizer_sharding = \"zero\" cannot be combined with engine = \"fsdp\" and join = "
           "true (FSDP's parameters are already per-rank shards, which ZeRO's broadcasts would "
           "overwrite); remove optimizer_sharding: FSDP's Join hook steps the shards itself");
  }
  requireWith(r, w, "overlap_with_ddp", zero, "optimizer_sharding = \"zero\"");
  requireWith(r, w, "parameters_as_bucket_view", zero, "optimizer_sharding = \"zero\"");
  if (auto v = r.boolean(w, "overlap_with_ddp")) tr.overlapWithDdp = *v;
  if (auto v = r.boolean(w, "parameters_as_bucket_view")) tr.parametersAsBucketView = *v;
  if (tr.overlapWithDdp) checkOverlapWithDdp(r, w, tr);
}

namespace {

// layer_compute = { forward_ms, backward_ms } (Note [Emulated layer compute]):
// each in [0, 60000] ms, at least one above 0.
void parseLayerCompute(const TomlReader& r, const toml::table& w, TrainingWorkload& tr) {
  const toml::table* t = r.table(w, "layer_compute");
  if (!t) return;
  r.checkKeys(*t, "layer_compute", {"forward_ms", "backward_ms"});
  const NumRange range{0, LayerCompute::kMaxMs, false, " ms"};
  LayerCompute& c = tr.layerCompute;
  if (auto v = r.number(*t, "forward_ms", range)) c.forwardMs = *v;
  if (auto v = r.number(*t, "backward_ms", range)) c.backwardMs = *v;
  if (!c.any()) {
    r.fail(r.lineOfKey(w, "layer_compute"),
           "layer_compute needs forward_ms or backward_ms above 0 (the sleep of every Linear "
           "layer); remove it for no emulated compute");
  }
}

}  // namespace

void parseTrainingWorkload(const TomlReader& r, const toml::table& w, Scenario& s) {
  r.checkKeys(w, "[workload] (kind = \"training\")",
              {"kind", "model", "sizes", "engine", "engine_options", "comm_hook", "optimizer",
               "lr", "steps", "batch_size", "batches", "no_sync_every", "seed", "join",
               "throw_on_early_termination", "divide_by_initial_world_size",
               "optimizer_sharding", "overlap_with_ddp", "parameters_as_bucket_view", "gpt",
               "layer_compute"});
  auto& tr = s.training;
  tr.pos = r.posOf(w);
  if (auto m = r.choice(w, "model", {"mlp", "residual_mlp", "two_layer", "gpt"})) tr.model = *m;
  parseGptShape(r, w, tr);
  if (auto sizes = r.intList(w, "sizes")) {
    bool ok = sizes->size() >= 2 &&
              std::all_of(sizes->begin(), sizes->end(), [](int64_t v) { return v > 0 && v <= 4096; });
    if (!ok) r.fail(r.lineOfKey(w, "sizes"), "'sizes' needs >= 2 positive widths (<= 4096)");
    tr.sizes = *sizes;
  }
  if (auto e = r.str(w, "engine")) tr.engine = *e;
  const EngineInfo* engine = findEngine(tr.engine);
  if (!engine) {
    r.fail(r.lineOfKey(w, "engine"), fmt::format("unknown engine '{}'; available engines: {}",
                                                 tr.engine, fmt::join(engineNames(), ", ")));
  }
  if (const toml::table* opts = r.table(w, "engine_options")) {
    std::set<std::string> known;
    for (const auto& [k, type] : engine->options) known.insert(k);
    r.checkKeys(*opts, fmt::format("engine_options of engine '{}'", tr.engine), known);
    for (const auto& [key, value] : *opts) {
      std::string k(key.str());
      OptionType type = engine->options.at(k);
      bool ok = (type == OptionType::kBool && value.is_boolean()) ||
                (type == OptionType::kInt && value.is_integer()) ||
                (type == OptionType::kFloat && value.is_number()) ||
                (type == OptionType::kString && value.is_string()) ||
                (type == OptionType::kBoolOrInt && (value.is_boolean() || value.is_integer()));
      if (!ok) r.fail(value, fmt::format("engine option '{}' must be {}", k, optionTypeName(type)));
      if (value.is_number()) checkEngineNumber(r, *engine, *opts, k);
      if (value.is_boolean()) tr.engineOptions[k] = value.as_boolean()->get() ? "true" : "false";
      if (value.is_integer()) tr.engineOptions[k] = std::to_string(value.as_integer()->get());
      if (value.is_floating_point()) {
        tr.engineOptions[k] = fmt::format("{}", value.as_floating_point()->get());
      }
      if (value.is_string()) tr.engineOptions[k] = value.as_string()->get();
    }
    if (engine->validate) {
      if (auto why = engine->validate(tr, s.worldSize)) {
        r.fail(r.lineOfKey(w, "engine_options"), *why);
      }
    }
  }
  if (auto h = r.str(w, "comm_hook")) tr.commHook = *h;
  if (!tr.commHook.empty() && std::find(engine->commHooks.begin(), engine->commHooks.end(),
                                         tr.commHook) == engine->commHooks.end()) {
    r.fail(r.lineOfKey(w, "comm_hook"),
           fmt::format("comm_hook '{}' is not available with engine '{}'; {}", tr.commHook,
                       tr.engine, engine->commHooks.empty()
                                      ? std::string("it has no comm hooks")
                                      : fmt::format("use one of: {}",
                                                    fmt::join(engine->commHooks, ", "))));
  }
  if (auto o = r.choice(w, "optimizer", {"sgd", "adam", "adamw"})) tr.optimizer = *o;
  if (auto lr = r.number(w, "lr", NumRange{0, 10, true})) tr.lr = *lr;
  if (auto v = r.intInRange(w, "steps", 1, 10000)) tr.steps = static_cast<int>(*v);
  if (auto v = r.intInRange(w, "batch_size", 1, 4096)) tr.batchSize = static_cast<int>(*v);
  if (auto v = r.intInRange(w, "no_sync_every", 0, 1000)) tr.noSyncEvery = static_cast<int>(*v);
  if (auto v = r.intInRange(w, "seed", 0, int64_t{1} << 40)) tr.seed = static_cast<uint64_t>(*v);
  if (const toml::table* b = r.table(w, "batches")) {
    for (const auto& [key, value] : *b) {
      const int rank = r.rankKey(key, s.worldSize, "batches key");
      const int64_t n = value.is_integer() ? value.as_integer()->get() : -1;
      if (n < 0 || n > 10000) {
        r.fail(value, fmt::format("batches of rank {} must be an integer in [0, 10000]", rank));
      }
      tr.batchesPerRank[rank] = static_cast<int>(n);
    }
  }
  if (engine) parseJoinAndSharding(r, w, *engine, tr);
  parseLayerCompute(r, w, tr);
}

namespace {

// No NUL or line break inside an argument or a variable: the kernel would cut
// the argument short, and a rank's log line would no longer be one line.
void checkPlainText(const TomlReader& r, const toml::node& at, const std::string& what,
                    const std::string& text) {
  for (const unsigned char c : text) {
    if (c == 0 || c == '\n' || c == '\r') {
      r.fail(at, fmt::format("{} holds a NUL or line-break character; use plain text", what));
    }
  }
}

bool validEnvName(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

void parseProgramEnv(const TomlReader& r, const toml::table& env, ProgramWorkload& p) {
  for (const auto& [key, value] : env) {
    const std::string name(key.str());
    if (!validEnvName(name)) {
      r.fail(value, fmt::format("env: '{}' is not a variable name (letters, digits and '_', "
                                "not starting with a digit)", name));
    }
    if (std::find(kRunnerOwnedEnvVars.begin(), kRunnerOwnedEnvVars.end(), name) !=
        kRunnerOwnedEnvVars.end()) {
      r.fail(value, fmt::format("env: {} is set by `distlab run` from the scenario ([cluster], "
                                "debug, the run folder); change the scenario instead", name));
    }
    if (!value.is_string()) r.fail(value, fmt::format("env: {} must be a string", name));
    checkPlainText(r, value, fmt::format("env: {}", name), value.as_string()->get());
    p.env[name] = value.as_string()->get();
  }
}

}  // namespace

void parseProgramWorkload(const TomlReader& r, const toml::table& w, Scenario& s) {
  r.checkKeys(w, "[workload] (kind = \"program\")", {"kind", "command", "env", "cwd"});
  ProgramWorkload& p = s.program;
  p.pos = r.posOf(w);
  auto command = r.strArray(w, "command");
  if (!command || command->empty() || command->front().empty()) {
    r.fail(r.lineOfKey(w, "command"),
           "a program workload needs command = [\"./your_program\", \"--arg\", ...]: the "
           "program (relative to this file's folder when it holds a '/', else looked up in "
           "PATH) and its arguments");
  }
  for (const auto& arg : *command) {
    checkPlainText(r, *w.get("command"), "an argument of 'command'", arg);
  }
  p.command = *command;
  if (const toml::table* env = r.table(w, "env")) parseProgramEnv(r, *env, p);
  if (auto cwd = r.str(w, "cwd")) {
    checkPlainText(r, *w.get("cwd"), "'cwd'", *cwd);
    p.cwd = *cwd;
  }
}

}  // namespace distlab::emulator::detail
