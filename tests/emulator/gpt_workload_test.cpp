// model = "gpt" in training scenarios (emulator/workloads/training_model.hpp):
// the batches are int64 token ids with the teacher's targets, read through
// the ranks' DistributedSampler shares (scenario_data.hpp); the model is nn::Gpt with its own FQNs; the loss is
// the cross entropy of the logits (checked against a sum written out here)
// and falls under SGD; and the fsdp engine's wrap = "block" makes each
// transformer block its own group beside the root (one reduce-scatter per
// group per step in the ranks' event logs, through `distlab run`).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "emulator/workloads/scenario_data.hpp"
#include "emulator/workloads/training_model.hpp"
#include "runtime/autograd/engine.hpp"
#include "runtime/autograd/grad_mode.hpp"
#include "runtime/optim/sgd.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace distlab::emulator {
namespace {

TrainingWorkload smallGpt(bool tied = false) {
  TrainingWorkload tr;
  tr.model = "gpt";
  tr.gpt = GptWorkload{16, 6, 8, 2, 2, tied};
  tr.batchSize = 3;
  return tr;
}

std::vector<int64_t> ids(const Tensor& t) { return t.contiguous().toVector<int64_t>(); }

TEST(GptWorkload, BatchesAreTokenIdsWithTheTeacherTargets) {
  const TrainingWorkload tr = smallGpt();
  auto [x, y] = scenarioBatch(tr, 2, 0, 0);
  ASSERT_EQ(x.dtype(), DType::kInt64);
  ASSERT_EQ(y.dtype(), DType::kInt64);
  EXPECT_EQ(x.sizes(), (Shape{3, 6}));
  EXPECT_EQ(y.sizes(), (Shape{3, 6}));
  const auto xs = ids(x), ys = ids(y);
  for (size_t i = 0; i < xs.size(); ++i) {
    ASSERT_GE(xs[i], 0);
    ASSERT_LT(xs[i], 16);
    const int64_t previous = i % 6 == 0 ? 0 : xs[i - 1];
    EXPECT_EQ(ys[i], (xs[i] + previous) % 16) << "token " << i;
  }
  EXPECT_EQ(ids(scenarioBatch(tr, 2, 0, 0).first), xs);  // the same sampler, the same batch
  EXPECT_NE(ids(scenarioBatch(tr, 2, 0, 1).first), xs);
  EXPECT_NE(ids(scenarioBatch(tr, 2, 1, 0).first), xs);  // and the ranks' shares differ
}

TEST(GptWorkload, ModelIsTheGptWithItsNames) {
  auto untied = buildScenarioModel(smallGpt(false));
  auto tied = buildScenarioModel(smallGpt(true));
  EXPECT_EQ(untied->typeName(), "Gpt");
  std::vector<std::string> names;
  for (const auto& [name, p] : untied->namedParameters()) names.push_back(name);
  for (const char* n : {"wte.weight", "wpe.weight", "h.0.attn.c_attn.weight",
                        "h.1.mlp.2.bias", "ln_f.weight", "lm_head.weight"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  }
  // The tied head is wte.weight, listed once.
  EXPECT_EQ(tied->namedParameters().size() + 1, untied->namedParameters().size());
}

// Mean over rows of logsumexp(logits) - logits[target], in double.
double crossEntropyByHand(const Tensor& logits, const std::vector<int64_t>& targets) {
  const int64_t vocab = logits.size(-1);
  const auto v = logits.to(DType::kFloat64).contiguous().toVector<double>();
  double total = 0;
  for (size_t r = 0; r < targets.size(); ++r) {
    const double* row = v.data() + r * static_cast<size_t>(vocab);
    const double top = *std::max_element(row, row + vocab);
    double sum = 0;
    for (int64_t c = 0; c < vocab; ++c) sum += std::exp(row[c] - top);
    total += top + std::log(sum) - row[targets[r]];
  }
  return total / static_cast<double>(targets.size());
}

TEST(GptWorkload, LossIsTheCrossEntropyOfTheLogitsAndFalls) {
  const TrainingWorkload tr = smallGpt();
  auto model = buildScenarioModel(tr);
  auto [x, y] = scenarioBatch(tr, 2, 0, 0);
  nn::TensorList out = model->call({x});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].sizes(), (Shape{3, 6, 16}));
  Tensor loss = scenarioLoss(out, y, true);
  EXPECT_NEAR(loss.item<double>(), crossEntropyByHand(out[0].detach(), ids(y)), 1e-5);
  optim::SgdOptions o;
  o.lr = 0.1;
  optim::SGD opt(model->parameters(), o);
  const double first = loss.item<double>();
  double last = first;
  for (int step = 0; step < 20; ++step) {
    Tensor l = scenarioLoss(model->call({x}), y, true);
    last = l.item<double>();
    autograd::backward(l);
    opt.step();
    opt.zeroGrad();
  }
  EXPECT_LT(last, 0.8 * first);
}

// The numels of rank 0's reduce-scatters in step 0 of an FSDP GPT run.
std::vector<int64_t> stepZeroReduceScatters(const std::string& wrap, bool tied) {
  testing::TempDir dir;
  std::ofstream(dir.file("g.toml")) << "name = \"gpt_wrap\"\ndescription = \"d\"\ngroup = \"test\"\n"
      "[cluster]\nworld_size = 2\ntimeout = 20\n[workload]\nkind = \"training\"\n"
      "model = \"gpt\"\ngpt = { vocab = 32, block = 8, embd = 32, heads = 2, layers = 2, tied = "
      << (tied ? "true" : "false") << " }\nengine = \"fsdp\"\nengine_options = { wrap = \""
      << wrap << "\" }\nsteps = 2\nbatch_size = 2\n[expect]\noutcome = \"success\"\n"
      "params_equal = true\n";
  auto r = testing::runCommandLine(std::string(DISTLAB_CLI_PATH) + " run " + dir.file("g.toml") +
                                   " --out " + dir.file("out"));
  EXPECT_EQ(r.exitCode, 0) << r.output;
  std::ifstream events(dir.file("out/test__g/rank0.events"));  // <group>__<file stem>
  EXPECT_TRUE(events.is_open()) << r.output;
  std::vector<int64_t> numels;
  std::string line;
  bool inStepZero = false;
  while (std::getline(events, line)) {
    if (line.find(" step ") != std::string::npos) inStepZero = line.ends_with(" step 0");
    std::istringstream in(line);
    std::string stamp, kind, seq, op;
    int64_t numel = 0;
    in >> stamp >> kind >> seq >> op >> numel;
    if (inStepZero && kind == "op" && op == "_REDUCE_SCATTER_BASE") numels.push_back(numel);
  }
  return numels;
}

// embd 32: a block holds 12 * 32^2 + 13 * 32 = 12704 elements; the root wte
// 32 * 32 + wpe 8 * 32 + ln_f 2 * 32 = 1344, plus lm_head 32 * 32 untied.
TEST(GptWorkload, FsdpPerBlockShardsEachTransformerBlockAndTheRoot) {
  EXPECT_EQ(stepZeroReduceScatters("block", true),
            (std::vector<int64_t>{12704, 12704, 1344}));  // h.1, h.0, then the root
  EXPECT_EQ(stepZeroReduceScatters("block", false),
            (std::vector<int64_t>{12704, 12704, 1344 + 1024}));
  EXPECT_EQ(stepZeroReduceScatters("root", false),
            (std::vector<int64_t>{2 * 12704 + 1344 + 1024}));
}

}  // namespace
}  // namespace distlab::emulator
