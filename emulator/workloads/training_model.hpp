#pragma once
// The model and loss of a training scenario, shared by every rank and by the
// single-process reference (so both start from bit-identical parameters);
// its data: scenario_data.hpp.
//
// ScenarioNet = body (mlp | residual_mlp | two_layer, from nn/models) and an
// auxiliary head `aux` = Linear(out, out). forwardAll returns {main, aux}; the
// loss is mse(main, y) + 0.1 * (mse(aux, y) or mean(aux^2)). On ranks with an
// unused_param fault the aux head does not run at all (setAuxUsed(false)), so
// its parameters are unreachable from the outputs there: a parameter unused
// on one rank only, which DDP handles with find_unused_parameters=true and
// rejects without it. (Computing aux but leaving it out of the loss would not
// do: DDP finds unused parameters by walking the graph from the outputs.)
// For two_layer, TwoLinLayerNet's a is the main path and b the aux.
//
// model = "gpt": the model is nn::Gpt itself (FQNs wte, wpe, h.<i>, ln_f,
// lm_head; no ScenarioNet and no aux head: the parser refuses the
// unused_param fault for it). Its batches are token ids and the targets
// (x[b, t] + x[b, t-1]) % vocab, a fixed teacher that needs attention to the
// previous token; loss = cross entropy of the logits
// (batch * block rows) against y.
#include <memory>
#include <utility>

#include "emulator/workloads/workload_spec.hpp"
#include "runtime/nn/module.hpp"

namespace distlab::emulator {

// Built on `device`: the seeded Generator draws the initial values on the
// host and the factories copy them there, so they equal the CPU build's.
std::shared_ptr<nn::Module> buildScenarioModel(const TrainingWorkload& tr,
                                               Device device = Device::cpu());
int64_t modelInputDim(const TrainingWorkload& tr);
int64_t modelOutputDim(const TrainingWorkload& tr);

// Runs or skips the aux head in forward (see the header comment).
void setAuxUsed(nn::Module& model, bool used);

// The scenario loss over the model outputs (see the header comment): cross
// entropy when `y` holds int64 token ids (gpt), else the MSE (+ aux) loss.
Tensor scenarioLoss(const nn::TensorList& outputs, const Tensor& y, bool useAux);

// FNV-1a 64 over the bytes of every tensor (read on the host whatever its
// device), as 16 hex digits.
std::string tensorsChecksum(const std::vector<Tensor>& tensors);

}  // namespace distlab::emulator
