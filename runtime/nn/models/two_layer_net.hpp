#pragma once
// The documents' TwoLinLayerNet: a = Linear(10, 10, bias=False),
// b = Linear(10, 1, bias=False); forward returns (a(x), b(x)). A loss built
// from one output only leaves the other layer's parameter unused (the
// find_unused_parameters examples).
#include <memory>

#include "runtime/nn/layers.hpp"

namespace distlab::nn {

class TwoLinLayerNet : public Module {
 public:
  explicit TwoLinLayerNet(Generator& gen);
  TensorList forwardAll(const TensorList& inputs) override;  // {a(x), b(x)}

 private:
  std::shared_ptr<Linear> a_;
  std::shared_ptr<Linear> b_;
};

}  // namespace distlab::nn
