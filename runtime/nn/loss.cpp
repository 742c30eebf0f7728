#include "runtime/nn/loss.hpp"

#include "runtime/core/check.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::nn {

TensorList MSELoss::forwardAll(const TensorList& inputs) {
  DL_CHECK_T(ValueError, inputs.size() == 2, "MSELoss expects (input, target), got ", inputs.size(),
             " tensors");
  return {mseLoss(inputs[0], inputs[1])};
}

TensorList CrossEntropyLoss::forwardAll(const TensorList& inputs) {
  DL_CHECK_T(ValueError, inputs.size() == 2, "CrossEntropyLoss expects (logits, targets), got ",
             inputs.size(), " tensors");
  return {crossEntropyLoss(inputs[0], inputs[1], ignoreIndex_)};
}

}  // namespace distlab::nn
