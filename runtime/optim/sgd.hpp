#pragma once
// SGD (PyTorch: torch.optim.SGD), single-tensor formulas:
//   g = grad (negated when maximize); g += weight_decay * p
//   momentum != 0: buf = g (first step) else buf = momentum * buf + (1 - dampening) * g;
//                  g = nesterov ? g + momentum * buf : buf
//   p -= lr * g
// Without weight decay, maximize and nesterov the step allocates nothing.
#include "runtime/optim/optimizer.hpp"

namespace distlab::optim {

struct SgdOptions {
  double lr = 1e-3;
  double momentum = 0.0;
  double dampening = 0.0;
  double weightDecay = 0.0;
  bool nesterov = false;
  bool maximize = false;
  Options toMap() const;
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, const SgdOptions& options);
  SGD(std::vector<ParamGroup> groups, const SgdOptions& defaults);
  void step() override;
};

}  // namespace distlab::optim
