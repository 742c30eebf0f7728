#include "runtime/nn/models/mlp.hpp"

#include "runtime/autograd/ops.hpp"
#include "runtime/core/check.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::nn {

Mlp::Mlp(const MlpOptions& options, Generator& gen) : Module("Mlp") {
  DL_CHECK_T(
      ValueError,
      options.depth >= 1 && options.hidden > 0 && options.inputDim > 0 && options.outputDim > 0,
      "Mlp: depth, hidden, inputDim and outputDim must be positive (got depth ", options.depth,
      ", hidden ", options.hidden, ")");
  layers_ = registerModule("layers", std::make_shared<Sequential>());
  int64_t width = options.inputDim;
  for (int64_t i = 0; i < options.depth; ++i) {
    layers_->push_back(std::make_shared<Linear>(width, options.hidden, gen, true, options.dtype));
    layers_->push_back(std::make_shared<ReLU>());
    width = options.hidden;
  }
  layers_->push_back(std::make_shared<Linear>(width, options.outputDim, gen, true, options.dtype));
}

TensorList Mlp::forwardAll(const TensorList& inputs) { return layers_->call(inputs); }

ResidualBlock::ResidualBlock(int64_t dim, int64_t hidden, Generator& gen, DType dtype)
    : Module("ResidualBlock") {
  ln_ = registerModule("ln", std::make_shared<LayerNorm>(Shape{dim}, 1e-5, true, dtype));
  fc1_ = registerModule("fc1", std::make_shared<Linear>(dim, hidden, gen, true, dtype));
  act_ = registerModule("act", std::make_shared<GELU>());
  fc2_ = registerModule("fc2", std::make_shared<Linear>(hidden, dim, gen, true, dtype));
}

TensorList ResidualBlock::forwardAll(const TensorList& inputs) {
  const Tensor& x = singleInput(inputs);
  return {ops::add(x, fc2_->forward(act_->forward(fc1_->forward(ln_->forward(x)))))};
}

ResidualMlp::ResidualMlp(const ResidualMlpOptions& options, Generator& gen)
    : Module("ResidualMlp") {
  DL_CHECK_T(ValueError, options.depth >= 0 && options.dim > 0 && options.hidden > 0,
             "ResidualMlp: dim and hidden must be positive and depth non-negative");
  proj_ = registerModule(
      "proj", std::make_shared<Linear>(options.inputDim, options.dim, gen, true, options.dtype));
  blocks_ = registerModule("blocks", std::make_shared<ModuleList>());
  for (int64_t i = 0; i < options.depth; ++i) {
    blocks_->push_back(
        std::make_shared<ResidualBlock>(options.dim, options.hidden, gen, options.dtype));
  }
  lnF_ = registerModule("ln_f",
                        std::make_shared<LayerNorm>(Shape{options.dim}, 1e-5, true, options.dtype));
  head_ = registerModule(
      "head", std::make_shared<Linear>(options.dim, options.outputDim, gen, true, options.dtype));
}

TensorList ResidualMlp::forwardAll(const TensorList& inputs) {
  Tensor x = proj_->forward(singleInput(inputs));
  for (const auto& block : *blocks_) x = block->forward(x);
  return {head_->forward(lnF_->forward(x))};
}

}  // namespace distlab::nn
