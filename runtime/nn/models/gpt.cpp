#include "runtime/nn/models/gpt.hpp"

#include <cmath>
#include <limits>

#include "runtime/autograd/ops.hpp"
#include "runtime/core/check.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::nn {

CausalSelfAttention::CausalSelfAttention(const GptOptions& o, Generator& gen)
    : Module("CausalSelfAttention"), nHead_(o.nHead) {
  cAttn_ =
      registerModule("c_attn", std::make_shared<Linear>(o.nEmbd, 3 * o.nEmbd, gen, true, o.dtype));
  cProj_ = registerModule("c_proj", std::make_shared<Linear>(o.nEmbd, o.nEmbd, gen, true, o.dtype));
}

TensorList CausalSelfAttention::forwardAll(const TensorList& inputs) {
  const Tensor& x = singleInput(inputs);
  const int64_t b = x.size(0), t = x.size(1), c = x.size(2), hd = c / nHead_;
  auto qkv = ops::split(cAttn_->forward(x), c, 2);
  auto heads = [&](const Tensor& z) {
    return ops::transpose(ops::reshape(z, {b, t, nHead_, hd}), 1, 2);  // (B, H, T, hd)
  };
  Tensor q = heads(qkv[0]), k = heads(qkv[1]), v = heads(qkv[2]);
  Tensor att = ops::mul(ops::matmul(q, ops::transpose(k, -2, -1)),
                        Scalar(1.0 / std::sqrt(static_cast<double>(hd))));
  Tensor pos = arange(t, TensorOptions{DType::kInt64, x.device()});
  Tensor future = pos.unsqueeze(0).gt(pos.unsqueeze(1));  // column > row
  att = ops::softmax(ops::maskedFill(att, future, -std::numeric_limits<double>::infinity()), -1);
  Tensor y = ops::reshape(ops::transpose(ops::matmul(att, v), 1, 2), {b, t, c});
  return {cProj_->forward(y)};
}

GptBlock::GptBlock(const GptOptions& o, Generator& gen) : Module("GptBlock") {
  ln1_ = registerModule("ln_1", std::make_shared<LayerNorm>(Shape{o.nEmbd}, 1e-5, true, o.dtype));
  attn_ = registerModule("attn", std::make_shared<CausalSelfAttention>(o, gen));
  ln2_ = registerModule("ln_2", std::make_shared<LayerNorm>(Shape{o.nEmbd}, 1e-5, true, o.dtype));
  mlp_ = registerModule("mlp", std::make_shared<Sequential>());
  // Sequential names children 0..2; nanoGPT's c_fc/c_proj become mlp.0 / mlp.2.
  mlp_->push_back(std::make_shared<Linear>(o.nEmbd, 4 * o.nEmbd, gen, true, o.dtype));
  mlp_->push_back(std::make_shared<GELU>());
  mlp_->push_back(std::make_shared<Linear>(4 * o.nEmbd, o.nEmbd, gen, true, o.dtype));
}

TensorList GptBlock::forwardAll(const TensorList& inputs) {
  Tensor x = singleInput(inputs);
  x = ops::add(x, attn_->forward(ln1_->forward(x)));
  return {ops::add(x, mlp_->forward(ln2_->forward(x)))};
}

Gpt::Gpt(const GptOptions& o, Generator& gen) : Module("Gpt"), options_(o) {
  DL_CHECK_T(ValueError, o.nHead > 0 && o.nEmbd % o.nHead == 0, "Gpt: nEmbd (", o.nEmbd,
             ") must be divisible by nHead (", o.nHead, ")");
  wte_ = registerModule("wte", std::make_shared<Embedding>(o.vocabSize, o.nEmbd, gen, o.dtype));
  wpe_ = registerModule("wpe", std::make_shared<Embedding>(o.blockSize, o.nEmbd, gen, o.dtype));
  h_ = registerModule("h", std::make_shared<ModuleList>());
  for (int64_t i = 0; i < o.nLayer; ++i) h_->push_back(std::make_shared<GptBlock>(o, gen));
  lnF_ = registerModule("ln_f", std::make_shared<LayerNorm>(Shape{o.nEmbd}, 1e-5, true, o.dtype));
  lmHead_ = registerModule("lm_head",
                           std::make_shared<Linear>(o.nEmbd, o.vocabSize, gen, false, o.dtype));
  if (o.tiedHead) lmHead_->setParameter("weight", wte_->param("weight"));
}

TensorList Gpt::forwardAll(const TensorList& inputs) {
  const Tensor& idx = singleInput(inputs);
  DL_CHECK_T(ValueError, idx.dim() == 2 && idx.size(1) <= options_.blockSize,
             "Gpt: expected token ids (B, T) with T <= ", options_.blockSize, ", got shape ",
             shapeToString(idx.sizes()));
  const Tensor pos = arange(idx.size(1), TensorOptions{DType::kInt64, idx.device()});
  Tensor x = ops::add(wte_->forward(idx), wpe_->forward(pos));
  for (const auto& block : *h_) x = block->forward(x);
  return {lmHead_->forward(lnF_->forward(x))};
}

}  // namespace distlab::nn
