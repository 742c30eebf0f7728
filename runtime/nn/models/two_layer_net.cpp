#include "runtime/nn/models/two_layer_net.hpp"

namespace distlab::nn {

TwoLinLayerNet::TwoLinLayerNet(Generator& gen) : Module("TwoLinLayerNet") {
  a_ = registerModule("a", std::make_shared<Linear>(10, 10, gen, false));
  b_ = registerModule("b", std::make_shared<Linear>(10, 1, gen, false));
}

TensorList TwoLinLayerNet::forwardAll(const TensorList& inputs) {
  const Tensor& x = singleInput(inputs);
  return {a_->forward(x), b_->forward(x)};
}

}  // namespace distlab::nn
