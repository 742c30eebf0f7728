#include "runtime/comm/object_collectives.hpp"

#include <fmt/format.h>

#include <cstring>

#include "runtime/core/errors.hpp"
#include "runtime/tensor/dispatch.hpp"

namespace distlab::comm {
namespace {

Tensor bytesTensor(const Bytes& b) {
  Tensor t = empty({static_cast<int64_t>(b.size())}, TensorOptions{DType::kUInt8});
  if (!b.empty()) std::memcpy(t.rawData(), b.data(), b.size());
  return t;
}

Bytes tensorBytes(const Tensor& t) {
  const auto* p = static_cast<const uint8_t*>(t.rawData());
  return Bytes(p, p + t.numel());
}

Tensor sizeTensor(int64_t n) { return full({1}, n, TensorOptions{DType::kInt64}); }

// The byte tensors live on the host, whatever default device the caller set
// (a DefaultDeviceGuard would otherwise put them on a GPU), and travel on the
// group's CPU route: a group without one (nccl alone) is told how to get one.
class OnHost {
 public:
  OnHost(const ProcessGroup& group, const char* what) : guard_(Device::cpu()) {
    if (!group.hasBackend(DeviceType::kCPU)) {
      throw ValueError(fmt::format(
          "{}: group '{}' has no backend for CPU tensors, and object collectives run on the "
          "host; create the group with a CPU backend too (e.g. backend \"cpu:gloo,cuda:nccl\")",
          what, group.name()));
    }
  }

 private:
  DefaultDeviceGuard guard_;
};

}  // namespace

void broadcastObject(ProcessGroup& group, Bytes& object, int src) {
  OnHost host(group, "broadcastObject");
  Tensor size = sizeTensor(static_cast<int64_t>(object.size()));
  group.broadcast(size, BroadcastOptions{.rootRank = src, .asyncOp = false})->wait();
  Tensor data = group.rank() == src ? bytesTensor(object)
                                    : empty({size.item<int64_t>()}, TensorOptions{DType::kUInt8});
  group.broadcast(data, BroadcastOptions{.rootRank = src, .asyncOp = false})->wait();
  if (group.rank() != src) object = tensorBytes(data);
}

std::vector<Bytes> allGatherObject(ProcessGroup& group, const Bytes& object) {
  OnHost host(group, "allGatherObject");
  const int n = group.size();
  Tensor mySize = sizeTensor(static_cast<int64_t>(object.size()));
  Tensor sizes = empty({n}, TensorOptions{DType::kInt64});
  group.allgatherIntoTensor(sizes, mySize, AllgatherOptions{.asyncOp = false})->wait();
  std::vector<Tensor> outputs;
  for (int q = 0; q < n; ++q) {
    outputs.push_back(empty({sizes.data<int64_t>()[q]}, TensorOptions{DType::kUInt8}));
  }
  group.allgather(outputs, bytesTensor(object), AllgatherOptions{.asyncOp = false})->wait();
  std::vector<Bytes> result;
  for (const auto& t : outputs) result.push_back(tensorBytes(t));
  return result;
}

std::vector<Bytes> gatherObject(ProcessGroup& group, const Bytes& object, int dst) {
  OnHost host(group, "gatherObject");
  // Sizes go to every rank (allgather) so the payload gather can use each
  // rank's exact size; the payload itself only lands on dst.
  const int n = group.size();
  Tensor mySize = sizeTensor(static_cast<int64_t>(object.size()));
  Tensor sizes = empty({n}, TensorOptions{DType::kInt64});
  group.allgatherIntoTensor(sizes, mySize, AllgatherOptions{.asyncOp = false})->wait();
  int64_t maxSize = 0;
  for (int q = 0; q < n; ++q) maxSize = std::max(maxSize, sizes.data<int64_t>()[q]);
  Tensor padded = zeros({maxSize}, TensorOptions{DType::kUInt8});
  if (!object.empty()) std::memcpy(padded.rawData(), object.data(), object.size());
  std::vector<Tensor> outputs;
  if (group.rank() == dst) {
    for (int q = 0; q < n; ++q) outputs.push_back(empty({maxSize}, TensorOptions{DType::kUInt8}));
  }
  group.gather(outputs, padded, GatherOptions{.rootRank = dst, .asyncOp = false})->wait();
  std::vector<Bytes> result;
  for (int q = 0; q < static_cast<int>(outputs.size()); ++q) {
    Bytes b = tensorBytes(outputs[q]);
    b.resize(static_cast<size_t>(sizes.data<int64_t>()[q]));
    result.push_back(std::move(b));
  }
  return result;
}

Bytes scatterObject(ProcessGroup& group, const std::vector<Bytes>& inputs, int src) {
  OnHost host(group, "scatterObject");
  const int n = group.size();
  const bool root = group.rank() == src;
  if (root && static_cast<int>(inputs.size()) != n) {
    throw ValueError("scatterObject: the source must give one object per rank (" +
                     std::to_string(n) + "), found " + std::to_string(inputs.size()));
  }
  Tensor mySize = sizeTensor(0);
  std::vector<Tensor> sizeList;
  if (root) {
    for (const auto& b : inputs) sizeList.push_back(sizeTensor(static_cast<int64_t>(b.size())));
  }
  group.scatter(mySize, sizeList, ScatterOptions{.rootRank = src, .asyncOp = false})->wait();
  // Payloads padded to the largest so scatter's equal-size rule holds; the
  // largest size travels with a broadcast.
  int64_t maxSize = 0;
  for (const auto& b : inputs) maxSize = std::max<int64_t>(maxSize, static_cast<int64_t>(b.size()));
  Tensor maxT = sizeTensor(maxSize);
  group.broadcast(maxT, BroadcastOptions{.rootRank = src, .asyncOp = false})->wait();
  maxSize = maxT.item<int64_t>();
  std::vector<Tensor> payloads;
  if (root) {
    for (const auto& b : inputs) {
      Tensor t = zeros({maxSize}, TensorOptions{DType::kUInt8});
      if (!b.empty()) std::memcpy(t.rawData(), b.data(), b.size());
      payloads.push_back(t);
    }
  }
  Tensor out = empty({maxSize}, TensorOptions{DType::kUInt8});
  group.scatter(out, payloads, ScatterOptions{.rootRank = src, .asyncOp = false})->wait();
  Bytes result = tensorBytes(out);
  result.resize(static_cast<size_t>(mySize.item<int64_t>()));
  return result;
}

}  // namespace distlab::comm
