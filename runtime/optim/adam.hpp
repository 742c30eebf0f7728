#pragma once
// Adam and AdamW (PyTorch: torch.optim.Adam / AdamW), single-tensor formulas:
//   g = grad (negated when maximize); step += 1
//   Adam:  g += weight_decay * p          AdamW: p *= 1 - lr * weight_decay
//   m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
//   amsgrad: vmax = max(vmax, v), used in place of v below
//   p -= (lr / (1 - beta1^step)) * m / (sqrt(v) / sqrt(1 - beta2^step) + eps)
// Defaults: lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight_decay 0 (Adam) / 1e-2 (AdamW).
#include "runtime/optim/optimizer.hpp"

namespace distlab::optim {

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weightDecay = 0.0;
  bool amsgrad = false;
  bool maximize = false;
  Options toMap() const;
};

struct AdamWOptions : AdamOptions {
  AdamWOptions() { weightDecay = 1e-2; }
};

class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, const AdamOptions& options);
  Adam(std::vector<ParamGroup> groups, const AdamOptions& defaults);
  void step() override;

 protected:
  Adam(std::string name,
       std::vector<ParamGroup> groups,
       const AdamOptions& defaults,
       bool decoupled);

 private:
  bool decoupled_;
};

class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, const AdamWOptions& options = {});
  AdamW(std::vector<ParamGroup> groups, const AdamWOptions& defaults);
};

}  // namespace distlab::optim
