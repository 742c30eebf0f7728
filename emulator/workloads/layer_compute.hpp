#pragma once
// Emulated compute in a training run: `layer_compute = { forward_ms,
// backward_ms }` in [workload] (scenarios/README.md).
//
// Note [Emulated layer compute]
// Every Linear layer of the rank's model sleeps `forwardMs` after its forward
// and `backwardMs` in its backward, before its weight and bias gradients are
// accumulated (the sleep sits on the layer's output, so autograd runs it
// just before the layer's own backward). A sleep keeps its length when many
// ranks share few cores, where real model compute slows with the number of
// ranks per core: a run at world 16 on two cores then has the compute
// profile of world 2, and what changes with the world is the communication.
// That makes an engine run (DDP's buckets, FSDP's prefetch) a reference for
// `distlab predict` at larger worlds (reports/predict.md). The sleeps are
// "compute" trace spans ("emulated forward" / "emulated backward"), and they
// change no value: the parameters equal an unemulated run's bit for bit.
// Only the ranks' models get them, not the single-process reference or the
// loss probe (emulated time is not their work).
#include "emulator/workloads/workload_spec.hpp"
#include "runtime/nn/module.hpp"

namespace distlab::emulator {

// Registers the sleeps on every Linear in `model` (the hooks live as long as
// the model). Returns the number of Linear layers that got them. A
// LayerCompute with both times 0 registers nothing.
int emulateLayerCompute(nn::Module& model, const LayerCompute& compute);

}  // namespace distlab::emulator
