#include "emulator/workloads/scenario_data.hpp"

#include <cmath>
#include <vector>

#include "emulator/workloads/training_model.hpp"
#include "runtime/autograd/grad_mode.hpp"
#include "runtime/data/distributed_sampler.hpp"

namespace distlab::emulator {
namespace {

Generator sampleGenerator(const TrainingWorkload& tr, int64_t index) {
  return Generator(tr.seed * 1000003ULL + static_cast<uint64_t>(index) * 7919ULL + 17);
}

// The sample indices of `rank`'s batch `step` (Note [Scenario data]).
std::vector<int64_t> batchIndices(const TrainingWorkload& tr, int worldSize, int rank,
                                  int step) {
  data::DistributedSamplerOptions o;
  o.numReplicas = worldSize;
  o.rank = rank;
  o.shuffle = true;
  o.seed = tr.seed;
  data::DistributedSampler sampler(
      static_cast<int64_t>(worldSize) * kBatchesPerEpoch * tr.batchSize, o);
  sampler.setEpoch(step / kBatchesPerEpoch);
  const std::vector<int64_t> share = sampler.indices();
  const int64_t first = static_cast<int64_t>(step % kBatchesPerEpoch) * tr.batchSize;
  return {share.begin() + first, share.begin() + first + tr.batchSize};
}

std::pair<Tensor, Tensor> gptBatch(const TrainingWorkload& tr,
                                   const std::vector<int64_t>& indices) {
  const GptWorkload& g = tr.gpt;
  std::vector<int64_t> ids;
  std::vector<int64_t> targets;
  for (int64_t index : indices) {
    Generator gen = sampleGenerator(tr, index);
    for (int64_t t = 0; t < g.block; ++t) {
      ids.push_back(gen.randint(0, g.vocab));
      const int64_t previous = t == 0 ? 0 : ids[ids.size() - 2];
      targets.push_back((ids.back() + previous) % g.vocab);
    }
  }
  const int64_t rows = static_cast<int64_t>(indices.size());
  return {fromVector(ids, {rows, g.block}), fromVector(targets, {rows, g.block})};
}

std::pair<Tensor, Tensor> regressionBatch(const TrainingWorkload& tr,
                                          const std::vector<int64_t>& indices) {
  const int64_t in = modelInputDim(tr), out = modelOutputDim(tr);
  std::vector<float> values;
  values.reserve(indices.size() * static_cast<size_t>(in));
  for (int64_t index : indices) {
    Generator gen = sampleGenerator(tr, index);
    for (int64_t k = 0; k < in; ++k) values.push_back(static_cast<float>(gen.normal()));
  }
  Generator teacherGen(tr.seed * 7 + 1);
  Tensor teacher = randn({in, out}, teacherGen).div(std::sqrt(static_cast<double>(in)));
  Tensor x = fromVector(values, {static_cast<int64_t>(indices.size()), in});
  return {x, x.mm(teacher)};
}

}  // namespace

std::pair<Tensor, Tensor> scenarioBatch(const TrainingWorkload& tr, int worldSize, int rank,
                                        int step, Device device) {
  autograd::NoGradGuard noGrad;
  const std::vector<int64_t> indices = batchIndices(tr, worldSize, rank, step);
  auto [x, y] = tr.model == "gpt" ? gptBatch(tr, indices) : regressionBatch(tr, indices);
  if (device.isCpu()) return {x, y};
  return {x.to(device), y.to(device)};
}

}  // namespace distlab::emulator
