#pragma once
// Multi-layer perceptrons.
//   Mlp:          layers = Sequential(depth x [Linear, ReLU], Linear(hidden, outputDim));
//                 the reference model is Mlp({1024, 1024, 4, 10}) (FQNs layers.0.weight,
//                 layers.0.bias, layers.2.weight, ..., layers.8.bias).
//   ResidualMlp:  input Linear(inputDim, dim) as `proj`, `blocks` of pre-LayerNorm
//                 residual MLP blocks (x + fc2(gelu(fc1(ln(x))))), `ln_f`, `head`.
#include <cstdint>
#include <memory>

#include "runtime/nn/containers.hpp"
#include "runtime/nn/layers.hpp"

namespace distlab::nn {

struct MlpOptions {
  int64_t inputDim = 1024;
  int64_t hidden = 1024;
  int64_t depth = 4;  // number of [Linear, ReLU] blocks
  int64_t outputDim = 10;
  DType dtype = DType::kFloat32;
};

class Mlp : public Module {
 public:
  Mlp(const MlpOptions& options, Generator& gen);
  TensorList forwardAll(const TensorList& inputs) override;
  const std::shared_ptr<Sequential>& layers() const { return layers_; }

 private:
  std::shared_ptr<Sequential> layers_;
};

struct ResidualMlpOptions {
  int64_t inputDim = 32;
  int64_t dim = 64;
  int64_t hidden = 256;  // width inside each block
  int64_t depth = 2;     // number of blocks
  int64_t outputDim = 10;
  DType dtype = DType::kFloat32;
};

class ResidualBlock : public Module {
 public:
  ResidualBlock(int64_t dim, int64_t hidden, Generator& gen, DType dtype);
  TensorList forwardAll(const TensorList& inputs) override;

 private:
  std::shared_ptr<LayerNorm> ln_;
  std::shared_ptr<Linear> fc1_;
  std::shared_ptr<GELU> act_;
  std::shared_ptr<Linear> fc2_;
};

class ResidualMlp : public Module {
 public:
  ResidualMlp(const ResidualMlpOptions& options, Generator& gen);
  TensorList forwardAll(const TensorList& inputs) override;

 private:
  std::shared_ptr<Linear> proj_;
  std::shared_ptr<ModuleList> blocks_;
  std::shared_ptr<LayerNorm> lnF_;
  std::shared_ptr<Linear> head_;
};

}  // namespace distlab::nn
