#pragma once
// GradBucket: what a communication hook sees of one gradient bucket
// (PyTorch: torch.distributed.GradBucket), and the hook types.
//
// A hook is called once per bucket per synchronising backward, on the thread
// running backward, strictly in bucket-index order (Note [Launch order] in
// reducer.hpp). It returns a Future whose value is ONE tensor shaped like
// buffer() (1-D, same numel and dtype): the new content of the bucket. The
// Reducer waits for it before backward returns and copies it into the
// parameters' `.grad`. The bucket is NOT pre-divided by the world size: a
// hook that sums must divide itself (PyTorch's contract).
//
// Note [Hook collectives and issue order]
// Every collective a hook issues must be issued in the same order on every
// rank. The simple way: issue them from the hook call itself (the backward
// thread). A Future callback runs on a communication thread and must never
// wait for a collective; it may issue one only if the hook orders all its
// issues itself, so that every rank issues them in the same sequence whatever
// thread runs which step (the built-in PowerSGD hooks chain each bucket's
// issues after the previous bucket's: Note [PowerSGD future chain]). The
// Reducer issues nothing else on the group between the first bucket's launch
// and the completion of every bucket's Future (with a hook registered it
// issues the find_unused_parameters used-map allreduce after that).
//
// Lifetime: a GradBucket is valid during the hook call only; tensors taken
// from it (buffer(), gradients()) stay valid as long as they are held.
#include <any>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "runtime/comm/future.hpp"
#include "runtime/comm/process_group.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab::ddp {

using FuturePtr = std::shared_ptr<comm::Future>;

class GradBucket {
 public:
  GradBucket(size_t index, size_t bucketCount, Tensor buffer, std::vector<int64_t> offsets,
             std::vector<int64_t> lengths, std::vector<Shape> sizes,
             std::vector<Tensor> parameters, comm::ProcessGroupPtr group);

  // Bucket index; buckets are rebuilt after the first iteration, so do not rely
  // on indices from the first iteration.
  size_t index() const { return index_; }
  // The flattened 1-D gradient buffer.
  const Tensor& buffer() const { return buffer_; }
  // One view of buffer() per parameter, shaped like the parameter.
  std::vector<Tensor> gradients() const;
  // The parameters of this bucket, in bucket order.
  const std::vector<Tensor>& parameters() const { return parameters_; }
  // Whether this is the last bucket reduced in an iteration (holds the first
  // layers of the forward pass).
  bool isLast() const { return index_ + 1 == bucketCount_; }
  // Replaces the buffer (same numel; dtype may differ, e.g. a compressed copy).
  void setBuffer(const Tensor& buffer);
  // distlab extension: the DDP instance's group. Hooks given no state (PyTorch:
  // None, meaning the default group) use this group.
  const comm::ProcessGroupPtr& processGroup() const { return group_; }
  const std::vector<int64_t>& offsets() const { return offsets_; }
  const std::vector<int64_t>& lengths() const { return lengths_; }
  const std::vector<Shape>& sizes() const { return sizes_; }

 private:
  size_t index_;
  size_t bucketCount_;
  Tensor buffer_;
  std::vector<int64_t> offsets_;
  std::vector<int64_t> lengths_;
  std::vector<Shape> sizes_;
  std::vector<Tensor> parameters_;
  comm::ProcessGroupPtr group_;
};

// A hook's state: any object (PyTorch passes `state` through untouched):
// a comm::ProcessGroupPtr for the default hooks, a
// std::shared_ptr<PowerSGDState> for PowerSGD, anything for user hooks; an
// empty std::any stands for None.
using HookState = std::any;
using CommHookFn = std::function<FuturePtr(const HookState& state, GradBucket& bucket)>;

// The state as std::shared_ptr<T>: null for an empty state; ValueError naming
// the hook and the expected type otherwise.
template <typename T>
std::shared_ptr<T> hookStateAs(const HookState& state, std::string_view hookName,
                               std::string_view typeName) {
  if (!state.has_value()) return nullptr;
  if (const auto* p = std::any_cast<std::shared_ptr<T>>(&state)) return *p;
  throw ValueError(fmt::format("{}: the hook state must be a std::shared_ptr<{}> (or empty)",
                               hookName, typeName));
}

// The group a default hook uses: the state's group, else the bucket's.
comm::ProcessGroupPtr hookGroup(const HookState& state, const GradBucket& bucket,
                                std::string_view hookName);

}  // namespace distlab::ddp
