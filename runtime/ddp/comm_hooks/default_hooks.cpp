#include "runtime/ddp/comm_hooks/default_hooks.hpp"

namespace distlab::ddp {
namespace {

// PyTorch _allreduce_fut: divide in place, allreduce, return the tensor.
FuturePtr allreduceFut(const comm::ProcessGroupPtr& group, const Tensor& tensor) {
  Tensor t = tensor;
  t.div_(static_cast<double>(group->size()));
  return group->allreduce(t)->getFuture()->then([](comm::Future& f) {
    return comm::Future::Value{f.value()[0]};
  });
}

FuturePtr compressHook(const HookState& state, GradBucket& bucket, DType dtype,
                       const char* name) {
  auto group = hookGroup(state, bucket, name);
  Tensor buffer = bucket.buffer();
  Tensor compressed = buffer.dtype() == dtype ? buffer.clone() : buffer.to(dtype);
  compressed.div_(static_cast<double>(group->size()));
  return group->allreduce(compressed)->getFuture()->then([buffer](comm::Future& f) {
    Tensor out = buffer;
    out.copy_(f.value()[0]);
    return comm::Future::Value{out};
  });
}

CommHookFn compressWrapper(CommHookFn hook, DType dtype) {
  return [hook = std::move(hook), dtype](const HookState& state, GradBucket& bucket) {
    Tensor original = bucket.buffer();
    bucket.setBuffer(original.dtype() == dtype ? original.clone() : original.to(dtype));
    FuturePtr inner = hook(state, bucket);
    return inner->then([original](comm::Future& f) {
      Tensor out = original;
      out.copy_(f.value()[0]);
      return comm::Future::Value{out};
    });
  };
}

}  // namespace

FuturePtr allreduceHook(const HookState& state, GradBucket& bucket) {
  return allreduceFut(hookGroup(state, bucket, "allreduceHook"), bucket.buffer());
}

FuturePtr fp16CompressHook(const HookState& state, GradBucket& bucket) {
  return compressHook(state, bucket, DType::kFloat16, "fp16CompressHook");
}

FuturePtr bf16CompressHook(const HookState& state, GradBucket& bucket) {
  return compressHook(state, bucket, DType::kBFloat16, "bf16CompressHook");
}

CommHookFn fp16CompressWrapper(CommHookFn hook) {
  return compressWrapper(std::move(hook), DType::kFloat16);
}

CommHookFn bf16CompressWrapper(CommHookFn hook) {
  return compressWrapper(std::move(hook), DType::kBFloat16);
}

FuturePtr noopHook(const HookState& /*state*/, GradBucket& bucket) {
  return comm::Future::completed({bucket.buffer()});
}

}  // namespace distlab::ddp
