#pragma once
// Losses (PyTorch: nn.MSELoss, nn.CrossEntropyLoss), mean reduction. The
// modules take (input, target) and return the scalar loss.
#include "runtime/autograd/ops.hpp"
#include "runtime/nn/module.hpp"

namespace distlab::nn {

inline Tensor mseLoss(const Tensor& input, const Tensor& target) {
  return ops::mseLoss(input, target);
}
inline Tensor crossEntropyLoss(const Tensor& logits,
                               const Tensor& targets,
                               int64_t ignoreIndex = ops::kDefaultIgnoreIndex) {
  return ops::crossEntropy(logits, targets, ignoreIndex);
}

class MSELoss : public Module {
 public:
  MSELoss() : Module("MSELoss") {}
  TensorList forwardAll(const TensorList& inputs) override;
};

class CrossEntropyLoss : public Module {
 public:
  explicit CrossEntropyLoss(int64_t ignoreIndex = ops::kDefaultIgnoreIndex)
      : Module("CrossEntropyLoss"), ignoreIndex_(ignoreIndex) {}
  TensorList forwardAll(const TensorList& inputs) override;

 private:
  int64_t ignoreIndex_;
};

}  // namespace distlab::nn
