#include "tests/join/uneven_reference.hpp"

#include <algorithm>

#include "runtime/autograd/engine.hpp"

namespace distlab::testing {

std::unique_ptr<optim::SGD> unevenSgd(const std::vector<Tensor>& params) {
  optim::SgdOptions o;
  o.lr = kUnevenLr;
  o.momentum = 0.9;
  return std::make_unique<optim::SGD>(params, o);
}

Batch unevenBatch(int worldSize, int rank, int step) {
  return shard(globalBatch(ModelKind::kMlp, worldSize * kUnevenRowsPerRank, step), rank,
               kUnevenRowsPerRank);
}

std::vector<Tensor> unevenHandReference(const std::vector<int>& batches, bool divideByInitial) {
  auto model = makeModel(ModelKind::kMlp);
  auto params = model->parameters();
  auto opt = unevenSgd(params);
  const int world = static_cast<int>(batches.size());
  const int steps = *std::max_element(batches.begin(), batches.end());
  for (int step = 0; step < steps; ++step) {
    std::vector<Tensor> sum;
    int active = 0;
    for (int r = 0; r < world; ++r) {
      if (batches[r] <= step) continue;
      ++active;
      opt->zeroGrad();
      Batch b = unevenBatch(world, r, step);
      autograd::backward(lossOf(ModelKind::kMlp, model->forward(b.x), b.y));
      for (size_t i = 0; i < params.size(); ++i) {
        if (sum.size() <= i) sum.push_back(params[i].grad().clone());
        else sum[i].add_(params[i].grad());
      }
    }
    const double divisor = divideByInitial ? world : active;
    for (size_t i = 0; i < params.size(); ++i) params[i].setGrad(sum[i].div(divisor));
    opt->step();
  }
  return copies(params);
}

}  // namespace distlab::testing
