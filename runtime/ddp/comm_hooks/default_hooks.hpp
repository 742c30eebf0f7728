#pragma once
// Built-in stateless communication hooks (PyTorch:
// torch.distributed.algorithms.ddp_comm_hooks.default_hooks and
// debugging_hooks). State: a comm::ProcessGroupPtr, or empty for the DDP
// instance's group (PyTorch: None = the default group).
//
//   ddp.registerCommHook(group, ddp::allreduceHook, "allreduce_hook");
//   ddp.registerCommHook(powerSgdState, ddp::fp16CompressWrapper(ddp::powerSgdHook));
#include "runtime/ddp/grad_bucket.hpp"

namespace distlab::ddp {

// Divides the bucket by the group size, allreduces it (SUM) and returns it:
// the same result as DDP without a hook.
FuturePtr allreduceHook(const HookState& state, GradBucket& bucket);

// Casts the bucket to float16 (bfloat16), divides by the group size,
// allreduces the compressed tensor and casts the result back into the
// bucket's buffer (the Future's value).
FuturePtr fp16CompressHook(const HookState& state, GradBucket& bucket);
FuturePtr bf16CompressHook(const HookState& state, GradBucket& bucket);

// Wraps any hook: the bucket's buffer is replaced by a float16 (bfloat16) copy
// for `hook`, whose result is cast back into the original buffer.
// fp16CompressHook == fp16CompressWrapper(allreduceHook).
CommHookFn fp16CompressWrapper(CommHookFn hook);
CommHookFn bf16CompressWrapper(CommHookFn hook);

// No communication: a completed Future holding the bucket as it is. For
// headroom analysis only (results are local, not averaged).
FuturePtr noopHook(const HookState& state, GradBucket& bucket);

}  // namespace distlab::ddp
