#include "runtime/nn/layers.hpp"

#include <cmath>

#include "runtime/autograd/grad_mode.hpp"
#include "runtime/autograd/ops.hpp"
#include "runtime/core/check.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::nn {

Tensor linearInit(const Shape& shape, int64_t fanIn, Generator& gen, DType dtype) {
  const double bound = fanIn > 0 ? 1.0 / std::sqrt(static_cast<double>(fanIn)) : 0.0;
  return uniform(shape, -bound, bound, gen, TensorOptions{dtype});
}

Linear::Linear(int64_t inFeatures, int64_t outFeatures, Generator& gen, bool bias, DType dtype)
    : Module("Linear"), in_(inFeatures), out_(outFeatures), hasBias_(bias) {
  DL_CHECK_T(ValueError, inFeatures > 0 && outFeatures > 0,
             "Linear: in_features and out_features must be positive, got ", inFeatures, " and ",
             outFeatures);
  registerParameter("weight", linearInit({outFeatures, inFeatures}, inFeatures, gen, dtype));
  if (bias) registerParameter("bias", linearInit({outFeatures}, inFeatures, gen, dtype));
}

void Linear::resetParameters(Generator& gen) {
  const DType dt = param("weight").dtype();
  fillState("weight", linearInit({out_, in_}, in_, gen, dt));
  if (hasBias_) fillState("bias", linearInit({out_}, in_, gen, dt));
}

TensorList Linear::forwardAll(const TensorList& inputs) {
  return {ops::linear(singleInput(inputs), param("weight"), hasBias_ ? param("bias") : Tensor())};
}

Embedding::Embedding(int64_t numEmbeddings, int64_t embeddingDim, Generator& gen, DType dtype)
    : Module("Embedding") {
  DL_CHECK_T(ValueError, numEmbeddings > 0 && embeddingDim > 0,
             "Embedding: sizes must be positive, got ", numEmbeddings, " x ", embeddingDim);
  registerParameter("weight", randn({numEmbeddings, embeddingDim}, gen, TensorOptions{dtype}));
}

void Embedding::resetParameters(Generator& gen) {
  const Tensor& w = param("weight");
  fillState("weight", randn(w.sizes(), gen, TensorOptions{w.dtype()}));
}

TensorList Embedding::forwardAll(const TensorList& inputs) {
  return {ops::embedding(param("weight"), singleInput(inputs))};
}

LayerNorm::LayerNorm(Shape normalizedShape, double eps, bool elementwiseAffine, DType dtype)
    : Module("LayerNorm"),
      shape_(std::move(normalizedShape)),
      eps_(eps),
      affine_(elementwiseAffine) {
  if (affine_) {
    registerParameter("weight", ones(shape_, TensorOptions{dtype}));
    registerParameter("bias", zeros(shape_, TensorOptions{dtype}));
  }
}

void LayerNorm::resetParameters(Generator&) {
  if (!affine_) return;
  fillState("weight", onesLike(param("weight")));
  fillState("bias", zerosLike(param("bias")));
}

TensorList LayerNorm::forwardAll(const TensorList& inputs) {
  return {ops::layerNorm(singleInput(inputs), shape_, affine_ ? param("weight") : Tensor(),
                         affine_ ? param("bias") : Tensor(), eps_)};
}

BatchNorm1d::BatchNorm1d(int64_t numFeatures,
                         double eps,
                         double momentum,
                         bool affine,
                         bool trackRunningStats,
                         DType dtype)
    : Module("BatchNorm1d"),
      eps_(eps),
      momentum_(momentum),
      affine_(affine),
      track_(trackRunningStats) {
  if (affine_) {
    registerParameter("weight", ones({numFeatures}, TensorOptions{dtype}));
    registerParameter("bias", zeros({numFeatures}, TensorOptions{dtype}));
  }
  if (track_) {
    registerBuffer("running_mean", zeros({numFeatures}, TensorOptions{dtype}));
    registerBuffer("running_var", ones({numFeatures}, TensorOptions{dtype}));
    registerBuffer("num_batches_tracked", zeros({}, TensorOptions{DType::kInt64}));
  }
}

void BatchNorm1d::resetParameters(Generator&) {
  if (affine_) {
    fillState("weight", onesLike(param("weight")));
    fillState("bias", zerosLike(param("bias")));
  }
  if (track_) {
    fillState("running_mean", zerosLike(buffer("running_mean")));
    fillState("running_var", onesLike(buffer("running_var")));
    fillState("num_batches_tracked", zerosLike(buffer("num_batches_tracked")));
  }
}

TensorList BatchNorm1d::forwardAll(const TensorList& inputs) {
  const bool useBatchStats = isTraining() || !track_;
  if (isTraining() && track_) {
    autograd::NoGradGuard noGrad;
    Tensor counter = buffer("num_batches_tracked");
    counter.add_(Scalar(1));
  }
  Tensor rm = track_ ? buffer("running_mean") : Tensor();
  Tensor rv = track_ ? buffer("running_var") : Tensor();
  return {ops::batchNorm(singleInput(inputs), rm, rv, affine_ ? param("weight") : Tensor(),
                         affine_ ? param("bias") : Tensor(), useBatchStats, momentum_, eps_)};
}

TensorList ReLU::forwardAll(const TensorList& inputs) { return {ops::relu(singleInput(inputs))}; }

TensorList GELU::forwardAll(const TensorList& inputs) { return {ops::gelu(singleInput(inputs))}; }

Dropout::Dropout(double p, uint64_t seed) : Module("Dropout"), p_(p), gen_(seed) {
  DL_CHECK_T(ValueError, p >= 0.0 && p <= 1.0,
             "dropout probability has to be between 0 and 1, but got ", p);
}

TensorList Dropout::forwardAll(const TensorList& inputs) {
  return {ops::dropout(singleInput(inputs), p_, isTraining(), gen_)};
}

}  // namespace distlab::nn
