// FSDP CPU offload on CUDA (OffloadPolicy::cpuOffload, Note [CPU offload] in
// runtime/fsdp/fsdp_param.hpp): 2 ranks are processes sharing the one GPU over
// the shm backend (CUDA tensors staged through pinned memory). Each rank builds
// the model on the GPU, shards it per block and at the root over a "cuda"
// mesh, and trains 10 steps twice: without offload and with it. Checked:
//   - with offload the sharded parameters (the optimizer's), their `.grad`s
//     and the optimizer state are CPU tensors, and in forward the module
//     computes with unsharded parameters on the GPU; without offload all of
//     them are on the GPU;
//   - both runs equal single-process CPU training on the whole batch, and each
//     other.
//
// Tolerance 1e-4 (maxRelativeError, tests/ddp/ddp_test_util.hpp), the GPU DDP
// bound of gpu_ddp_test.cpp for the same reason: CPU FSDP matches local
// training to 1e-5 (fsdp_parity_test.cpp); on the GPU the kernels sum in their
// own order, and with offload the optimizer steps on the CPU rather than the
// GPU (the same arithmetic, other rounding of the fused expressions), a few
// ulps per step, which 10 steps of lr 0.05 (AdamW: lr / eps bounded, Note
// [AdamW eps in parity tests]) keep under 1e-4. A gradient copied to the wrong
// place or a lost reduction is off by O(1e-2).
#include <gtest/gtest.h>

#include "runtime/autograd/engine.hpp"
#include "runtime/comm/group_management.hpp"
#include "runtime/tensor/dispatch.hpp"
#include "tests/fsdp/fsdp_test_util.hpp"
#include "tests/gpu/gpu_fork_check.hpp"

namespace distlab::testing {
namespace {

constexpr double kTol = 1e-4;

using GpuFsdpOffload = gputest::ForkedCudaTest;

struct WhereTensors {
  bool shardsOn = true;          // every sharded parameter on the expected device
  bool gradsOn = true;           // every sharded .grad after backward
  bool stateOn = true;           // every optimizer state buffer
  bool unshardedOnGpu = true;    // the parameters the module computes with
};

bool onDevice(const Tensor& t, bool cpu) { return t.device().isCpu() == cpu; }

// One FSDP training run of this rank on the GPU; full parameters as host copies.
std::vector<Tensor> trainOnGpu(const RankContext& ctx, const TrainConfig& config, bool offload,
                               WhereTensors& seen) {
  std::shared_ptr<nn::Module> model;
  {
    DefaultDeviceGuard guard(Device::cuda(0));
    model = makeModel(config.model);
  }
  fsdp::FullyShardOptions options;
  options.mesh = comm::DeviceMesh::fromGroups({comm::defaultGroup()}, "cuda");
  options.offloadPolicy.cpuOffload = offload;
  auto root = shardModel(model, config.model, Wrap::kPerBlock, options);
  auto opt = makeOptimizer(config.optim, model->parameters(), config.lr);
  for (const Tensor& p : model->parameters()) seen.shardsOn &= onDevice(p, offload);
  // Runs after FSDP's pre-forward (registered later): the first block computes
  // with its unsharded parameters.
  auto block = model->child(config.model == ModelKind::kMlp ? "layers" : "h")->child("0");
  nn::HookHandle hook = block->registerForwardPreHook([&](nn::Module& m, const nn::TensorList&) {
    for (const Tensor& p : m.parameters()) seen.unshardedOnGpu &= p.device().isCuda();
    return std::optional<nn::TensorList>();
  });
  for (int step = 0; step < config.steps; ++step) {
    Batch local = shard(globalBatch(config.model, ctx.worldSize * config.perRank, step),
                        ctx.rank, config.perRank);
    opt->zeroGrad();
    Tensor loss = lossOf(config.model, model->forward(local.x.to(Device::cuda(0))),
                         local.y.to(Device::cuda(0)));
    autograd::backward(loss);
    for (const Tensor& p : model->parameters()) {
      seen.gradsOn &= p.grad().defined() && onDevice(p.grad(), offload);
    }
    opt->step();
  }
  for (const Tensor& p : model->parameters()) {
    const optim::ParamState* st = opt->findState(p);
    if (st == nullptr) continue;
    for (const auto& [name, buffer] : st->buffers) seen.stateOn &= onDevice(buffer, offload);
  }
  std::vector<Tensor> out;
  for (const Tensor& t : fullParameters(*root)) out.push_back(t.to(Device::cpu()));
  return out;
}

TEST_F(GpuFsdpOffload, OffloadedRunEqualsDeviceRunAndLocalTrainingWithHostShards) {
  const int world = 2;
  for (ModelKind model : {ModelKind::kMlp, ModelKind::kGpt}) {
    for (OptimKind optim : {OptimKind::kSgd, OptimKind::kAdamW}) {
      TrainConfig config;
      config.model = model;
      config.optim = optim;
      const std::vector<Tensor> reference = trainReference(config, world);
      spawn(SpawnMode::kProcesses, world, [&](RankContext& ctx) {
        comm::initProcessGroup({.backend = "shm", .store = ctx.store, .worldSize = world,
                                .rank = ctx.rank, .timeout = std::chrono::seconds(30)});
        const std::string what = modelName(model) + " rank " + std::to_string(ctx.rank);
        WhereTensors onGpu, offloaded;
        const auto device = trainOnGpu(ctx, config, /*offload=*/false, onGpu);
        const auto host = trainOnGpu(ctx, config, /*offload=*/true, offloaded);
        EXPECT_LE(maxRelativeError(device, reference), kTol) << what;
        EXPECT_LE(maxRelativeError(host, reference), kTol) << what;
        EXPECT_LE(maxRelativeError(host, device), kTol) << what;
        EXPECT_TRUE(onGpu.shardsOn && onGpu.gradsOn && onGpu.stateOn) << what << " (no offload)";
        EXPECT_TRUE(offloaded.shardsOn) << what << ": sharded parameters not on the CPU";
        EXPECT_TRUE(offloaded.gradsOn) << what << ": sharded gradients not on the CPU";
        EXPECT_TRUE(offloaded.stateOn) << what << ": optimizer state not on the CPU";
        EXPECT_TRUE(onGpu.unshardedOnGpu && offloaded.unshardedOnGpu) << what;
        comm::destroyProcessGroup();
      }, SpawnOptions{.timeout = std::chrono::seconds(120)});
    }
  }
}

}  // namespace
}  // namespace distlab::testing
