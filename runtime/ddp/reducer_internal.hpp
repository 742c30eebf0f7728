#pragma once
// Internals shared by the reducer*.cpp files (not part of the API).
#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/clock.hpp"
#include "runtime/ddp/reducer.hpp"

namespace distlab::ddp {

struct Reducer::Bucket {
  size_t index = 0;
  Tensor gradients;  // the flat buffer the collective runs on
  std::vector<size_t> variableIndices;
  std::vector<int64_t> offsets;
  std::vector<int64_t> lengths;
  std::vector<Shape> sizes;
  std::vector<Tensor> viewsIn;   // views of `gradients`, one per variable
  std::vector<Tensor> viewsOut;  // views of the hook's result (== viewsIn when in place)
  int64_t sizeLimit = 0;
  size_t pending = 0;            // variables not yet ready this iteration
  FuturePtr future;
  bool communicated = true;
  int64_t readyNs = 0;
  int64_t launchedNs = 0;
  // Stamped by the thread completing the Future.
  std::shared_ptr<std::atomic<int64_t>> completedNs = std::make_shared<std::atomic<int64_t>>(0);
};

namespace detail {

// A host tensor of the Reducer's bookkeeping (bucket order, used map), ready
// for a collective: itself when the group has a CPU route, else a copy on the
// parameters' `device` (a group with only a CUDA backend, nccl). Read the
// result back with copy_ when it is not the same tensor.
inline Tensor onCommRoute(const comm::ProcessGroup& group, const Tensor& host, Device device) {
  return group.hasBackend(DeviceType::kCPU) ? host : host.to(device);
}

// PyTorch's is_alias_of, made strict: same storage and same first element.
inline bool sameMemory(const Tensor& a, const Tensor& b) {
  return a.defined() && b.defined() && a.sharesStorageWith(b) &&
         a.storageOffset() == b.storageOffset() && a.numel() == b.numel();
}

// dst = src * factor in one pass (dst contiguous; same dtype fast path).
void copyScaled(Tensor& dst, const Tensor& src, double factor);


// "0 3 7" (PyTorch prints index lists space separated).
std::string joinIndices(const std::vector<size_t>& indices);

}  // namespace detail
}  // namespace distlab::ddp
