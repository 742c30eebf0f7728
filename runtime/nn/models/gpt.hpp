#pragma once
// A small GPT-style decoder (names as in nanoGPT): token embedding `wte`,
// position embedding `wpe`, blocks `h.<i>` of [ln_1, attn (c_attn, c_proj:
// causal multi-head self-attention), ln_2, mlp (c_fc, GELU, c_proj)] with
// pre-LayerNorm residuals, final `ln_f` and `lm_head` (no bias). With
// tiedHead the head reuses wte.weight (listed once by namedParameters()).
// Input: int64 token ids (B, T) with T <= blockSize; output logits (B, T, vocab).
#include <cstdint>
#include <memory>

#include "runtime/nn/containers.hpp"
#include "runtime/nn/layers.hpp"

namespace distlab::nn {

struct GptOptions {
  int64_t vocabSize = 64;
  int64_t blockSize = 16;
  int64_t nEmbd = 32;
  int64_t nHead = 2;
  int64_t nLayer = 2;
  bool tiedHead = false;
  DType dtype = DType::kFloat32;
};

class CausalSelfAttention : public Module {
 public:
  CausalSelfAttention(const GptOptions& options, Generator& gen);
  TensorList forwardAll(const TensorList& inputs) override;

 private:
  int64_t nHead_;
  std::shared_ptr<Linear> cAttn_;
  std::shared_ptr<Linear> cProj_;
};

class GptBlock : public Module {
 public:
  GptBlock(const GptOptions& options, Generator& gen);
  TensorList forwardAll(const TensorList& inputs) override;

 private:
  std::shared_ptr<LayerNorm> ln1_;
  std::shared_ptr<CausalSelfAttention> attn_;
  std::shared_ptr<LayerNorm> ln2_;
  std::shared_ptr<Sequential> mlp_;
};

class Gpt : public Module {
 public:
  Gpt(const GptOptions& options, Generator& gen);
  TensorList forwardAll(const TensorList& inputs) override;
  const GptOptions& options() const { return options_; }

 private:
  GptOptions options_;
  std::shared_ptr<Embedding> wte_;
  std::shared_ptr<Embedding> wpe_;
  std::shared_ptr<ModuleList> h_;
  std::shared_ptr<LayerNorm> lnF_;
  std::shared_ptr<Linear> lmHead_;
};

}  // namespace distlab::nn
