#pragma once
// The DDP comm hooks that drive a ZeroRedundancyOptimizer built with
// overlapWithDdp = true (PyTorch: torch.distributed.algorithms.ddp_comm_hooks.
// ddp_zero_hook.hook_with_zero_step / hook_with_zero_step_interleaved).
//
//   zero::ZeroRedundancyOptimizer opt(model->parameters(), optim::optimizerFactory("adam"),
//                                     group, {.overlapWithDdp = true}, {{"lr", 0.01}});
//   ddp.registerCommHook(group, zero::hookWithZeroStep(ddp::allreduceHook, ddp, opt),
//                        "hook_with_zero_step");
//   for (...) { opt.zeroGrad(); backward(loss(ddp.forward(x))); opt.step(); }
//
// Note [ZeRO overlapped with DDP]
// The returned hook runs `hook` (which must return the bucket's averaged
// gradients, like ddp::allreduceHook) and adds ZeRO's step to the backward pass:
// - Warm-up (PyTorch's documented behaviour): until DDP has rebuilt its
//   buckets (the second forward; the third with static_graph) the hook only
//   runs `hook`. In the first backward after the rebuild it records each
//   bucket's parameters and, at the last bucket, partitions by bucket (bucket i
//   to rank i % world) and builds the local optimizers. So the parameters are
//   NOT updated in the first two iterations (three with static_graph); the
//   updates start with the third (fourth). Prepend dummy inputs to adjust.
// - Then, per bucket i: the owner of bucket i waits for its allreduce, steps
//   the bucket's parameters with the averaged gradients, and every rank issues
//   a broadcast of the bucket's (flattened) parameters from the owner. At the
//   last bucket every rank waits for the broadcasts and copies the result into
//   its parameters, so the next forward sees the updated model.
// - hookWithZeroStep steps every bucket at the last bucket's call (when all
//   allreduces are issued). hookWithZeroStepInterleaved steps bucket i-1 at
//   bucket i's call, overlapping that step and broadcast with the backward
//   computation and the allreduces still running. PyTorch runs the
//   interleaved step in a Future callback; distlab issues every collective
//   from the hook call on the backward thread instead, so all ranks issue them
//   in the same order (Note [Hook collectives and issue order], grad_bucket.hpp)
//   — which is also why, unlike PyTorch (NCCL only), gloo and shm work.
// - ZeroRedundancyOptimizer::step() is then only bookkeeping.
// The .grad fields hold the averaged gradients after backward, as without
// overlap (the Reducer writes them); the local step reads the hook's results.
//
// Errors (ValueError, at construction): the optimizer was not built with
// overlapWithDdp; a hook was already made for it; the DDP model's parameters
// are not the optimizer's; DDP would never rebuild its buckets
// (find_unused_parameters without static_graph: the hook could never start
// stepping); the two use groups of different rank or size.
//
// Lifetime: the hook keeps references to `ddp` and `zero`; both must outlive
// every backward pass that runs it. Blocking: waits (group timeout) for the
// owned buckets' allreduces and for the broadcasts, on the backward thread.
#include "runtime/ddp/distributed_data_parallel.hpp"
#include "runtime/ddp/grad_bucket.hpp"
#include "runtime/zero/zero_redundancy_optimizer.hpp"

namespace distlab::zero {

ddp::CommHookFn hookWithZeroStep(ddp::CommHookFn hook, ddp::DistributedDataParallel& ddp,
                                 ZeroRedundancyOptimizer& zero);
ddp::CommHookFn hookWithZeroStepInterleaved(ddp::CommHookFn hook,
                                            ddp::DistributedDataParallel& ddp,
                                            ZeroRedundancyOptimizer& zero);

}  // namespace distlab::zero
