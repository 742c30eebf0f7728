#pragma once
// Layers (PyTorch: torch.nn.Linear, Embedding, LayerNorm, BatchNorm1d, ReLU,
// GELU, Dropout). Initialization follows PyTorch's defaults and draws from the
// Generator passed in, in PyTorch's order (weight, then bias):
//   Linear     weight, bias ~ U(-1/sqrt(in), 1/sqrt(in))  (kaiming_uniform, a=sqrt(5))
//   Embedding  weight ~ N(0, 1)
//   LayerNorm  weight = 1, bias = 0;  BatchNorm1d the same, running stats 0 / 1
// resetParameters(gen) re-draws them in place in the same order (Note [Meta
// models] in module_device.cpp).
#include <cstdint>

#include "runtime/nn/module.hpp"
#include "runtime/tensor/generator.hpp"

namespace distlab::nn {

// U(-1/sqrt(fanIn), 1/sqrt(fanIn)) of `shape` (PyTorch's Linear init for both
// weight, with fanIn = in_features, and bias).
Tensor linearInit(const Shape& shape, int64_t fanIn, Generator& gen, DType dtype);

class Linear : public Module {
 public:
  Linear(int64_t inFeatures,
         int64_t outFeatures,
         Generator& gen,
         bool bias = true,
         DType dtype = DType::kFloat32);
  TensorList forwardAll(const TensorList& inputs) override;
  void resetParameters(Generator& gen) override;
  int64_t inFeatures() const { return in_; }
  int64_t outFeatures() const { return out_; }

 private:
  int64_t in_;
  int64_t out_;
  bool hasBias_;
};

class Embedding : public Module {
 public:
  Embedding(int64_t numEmbeddings,
            int64_t embeddingDim,
            Generator& gen,
            DType dtype = DType::kFloat32);
  TensorList forwardAll(const TensorList& inputs) override;  // int64 indices
  void resetParameters(Generator& gen) override;
};

class LayerNorm : public Module {
 public:
  explicit LayerNorm(Shape normalizedShape,
                     double eps = 1e-5,
                     bool elementwiseAffine = true,
                     DType dtype = DType::kFloat32);
  TensorList forwardAll(const TensorList& inputs) override;
  void resetParameters(Generator& gen) override;

 private:
  Shape shape_;
  double eps_;
  bool affine_;
};

// Buffers running_mean, running_var, num_batches_tracked (int64) when tracking.
// Training (or no running stats): batch statistics; eval: running statistics.
class BatchNorm1d : public Module {
 public:
  explicit BatchNorm1d(int64_t numFeatures,
                       double eps = 1e-5,
                       double momentum = 0.1,
                       bool affine = true,
                       bool trackRunningStats = true,
                       DType dtype = DType::kFloat32);
  TensorList forwardAll(const TensorList& inputs) override;
  void resetParameters(Generator& gen) override;

 private:
  double eps_;
  double momentum_;
  bool affine_;
  bool track_;
};

class ReLU : public Module {
 public:
  ReLU() : Module("ReLU") {}
  TensorList forwardAll(const TensorList& inputs) override;
};

class GELU : public Module {
 public:
  GELU() : Module("GELU") {}
  TensorList forwardAll(const TensorList& inputs) override;
};

// Masks come from the module's own Generator (seeded at construction).
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5, uint64_t seed = 0);
  TensorList forwardAll(const TensorList& inputs) override;

 private:
  double p_;
  Generator gen_;
};

}  // namespace distlab::nn
