// NcclBackend collectives: validate what only this backend can see, describe
// the Work, and enqueue the NCCL calls (the table in nccl_backend.hpp).
#include <fmt/format.h>

#include <memory>

#include "runtime/comm/backends/nccl/nccl_backend.hpp"
#include "runtime/comm/backends/nccl/nccl_util.hpp"
#include "runtime/comm/reduce_kernels.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::comm::nccl_backend {
namespace {

std::string redopName(ReduceOp op) { return std::string(reduceOpName(op)); }

// Throws ValueError before anything is enqueued when NCCL cannot run `op`.
void checkOp(ReduceOp op, DType dtype, std::string_view where) {
  checkReduceOpSupported(op, dtype, where);
  if (op.kind != ReduceOp::kPremulSum) ncclReduceOp(op, dtype);
}

// Note [Empty NCCL calls]
// An empty tensor may have no device pointer; every rank knows the element
// counts (equal shapes, or the per-rank sizes all ranks were given), so all
// ranks leave out the same zero-element NCCL calls, and an operation with
// nothing to move only records its events.
ncclDataType_t type(const Tensor& t) { return ncclType(t.dtype()); }

void copyOnStream(const NcclCall& c, void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  cuda::check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, c.stream()),
              "cudaMemcpyAsync", c.comm.device());
}

}  // namespace

WorkPtr NcclBackend::broadcast(const Tensor& tensor, const BroadcastOptions& opts) {
  return launch({info(OpType::kBroadcast, opts.seq, {tensor}, {tensor}, opts.timeout,
                      opts.rootRank),
                 {tensor}, {tensor}},
                [=](const NcclCall& c) {
                  if (count(tensor) == 0) return;  // Note [Empty NCCL calls]
                  c.check(ncclBroadcast(tensor.rawData(), tensor.rawData(), count(tensor),
                                        type(tensor), opts.rootRank, c.handle(), c.stream()),
                          "ncclBroadcast");
                });
}

WorkPtr NcclBackend::allreduce(const Tensor& tensor, const AllreduceOptions& opts) {
  checkOp(opts.reduceOp, tensor.dtype(), "nccl allreduce");
  return launch({info(OpType::kAllreduce, opts.seq, {tensor}, {tensor}, opts.timeout, -1, 0,
                      redopName(opts.reduceOp)),
                 {tensor}, {tensor}},
                [=](const NcclCall& c) {
                  if (count(tensor) == 0) return;
                  ScopedRedOp op(opts.reduceOp, tensor.dtype(), c.handle());
                  c.check(ncclAllReduce(tensor.rawData(), tensor.rawData(), count(tensor),
                                        type(tensor), op.get(), c.handle(), c.stream()),
                          "ncclAllReduce");
                });
}

WorkPtr NcclBackend::allreduceCoalesced(const std::vector<Tensor>& tensors,
                                        const AllreduceCoalescedOptions& opts) {
  for (const auto& t : tensors) checkOp(opts.reduceOp, t.dtype(), "nccl allreduce_coalesced");
  return launch({info(OpType::kAllreduceCoalesced, opts.seq, tensors, tensors, opts.timeout, -1,
                      0, redopName(opts.reduceOp)),
                 tensors, tensors},
                [=](const NcclCall& c) {
                  // The operations outlive the group: NCCL uses them at ncclGroupEnd.
                  std::vector<std::unique_ptr<ScopedRedOp>> ops;
                  c.grouped([&] {
                    for (const auto& t : tensors) {
                      if (count(t) == 0) continue;
                      ops.push_back(
                          std::make_unique<ScopedRedOp>(opts.reduceOp, t.dtype(), c.handle()));
                      c.check(ncclAllReduce(t.rawData(), t.rawData(), count(t), type(t),
                                            ops.back()->get(), c.handle(), c.stream()),
                              "ncclAllReduce");
                    }
                  });
                });
}

WorkPtr NcclBackend::reduce(const Tensor& tensor, const ReduceOptions& opts) {
  checkOp(opts.reduceOp, tensor.dtype(), "nccl reduce");
  return launch({info(OpType::kReduce, opts.seq, {tensor}, {tensor}, opts.timeout, opts.rootRank,
                      0, redopName(opts.reduceOp)),
                 {tensor}, {tensor}},
                [=](const NcclCall& c) {
                  if (count(tensor) == 0) return;
                  ScopedRedOp op(opts.reduceOp, tensor.dtype(), c.handle());
                  c.check(ncclReduce(tensor.rawData(), tensor.rawData(), count(tensor),
                                     type(tensor), op.get(), opts.rootRank, c.handle(),
                                     c.stream()),
                          "ncclReduce");
                });
}

// One broadcast per rank in one NCCL group: per-rank sizes may differ.
WorkPtr NcclBackend::allgather(const std::vector<Tensor>& outputs, const Tensor& input,
                               const AllgatherOptions& opts) {
  if (outputs[rank()].numel() != input.numel()) {
    throw ValueError(fmt::format("nccl allgather: output {} has {} elements but this rank's "
                                 "input has {}", rank(), outputs[rank()].numel(), input.numel()));
  }
  return launch({info(OpType::kAllgather, opts.seq, {input}, outputs, opts.timeout), outputs,
                 concat({input}, outputs)},
                [=, this](const NcclCall& c) {
                  c.grouped([&] {
                    for (int q = 0; q < size(); ++q) {
                      if (count(outputs[q]) == 0) continue;  // every rank knows the sizes
                      const void* src = q == rank() ? input.rawData() : outputs[q].rawData();
                      c.check(ncclBroadcast(src, outputs[q].rawData(), count(outputs[q]),
                                            type(outputs[q]), q, c.handle(), c.stream()),
                              "ncclBroadcast");
                    }
                  });
                });
}

WorkPtr NcclBackend::allgatherIntoTensor(const Tensor& output, const Tensor& input,
                                         const AllgatherOptions& opts) {
  return launch({info(OpType::kAllgatherBase, opts.seq, {input}, {output}, opts.timeout),
                 {output}, {input, output}},
                [=](const NcclCall& c) {
                  if (count(input) == 0) return;
                  c.check(ncclAllGather(input.rawData(), output.rawData(), count(input),
                                        type(input), c.handle(), c.stream()),
                          "ncclAllGather");
                });
}

WorkPtr NcclBackend::allgatherCoalesced(const std::vector<std::vector<Tensor>>& outputLists,
                                        const std::vector<Tensor>& inputs,
                                        const AllgatherOptions& opts) {
  std::vector<Tensor> flat;
  for (const auto& list : outputLists) flat.insert(flat.end(), list.begin(), list.end());
  return launch({info(OpType::kAllgatherCoalesced, opts.seq, inputs, flat, opts.timeout), flat,
                 concat(inputs, flat)},
                [=, this](const NcclCall& c) {
                  c.grouped([&] {
                    for (size_t i = 0; i < inputs.size(); ++i) {
                      for (int q = 0; q < size(); ++q) {
                        const Tensor& out = outputLists[i][q];
                        if (count(out) == 0) continue;
                        const void* src = q == rank() ? inputs[i].rawData() : out.rawData();
                        c.check(ncclBroadcast(src, out.rawData(), count(out), type(out), q,
                                              c.handle(), c.stream()),
                                "ncclBroadcast");
                      }
                    }
                  });
                });
}

WorkPtr NcclBackend::reduceScatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                   const ReduceScatterOptions& opts) {
  checkOp(opts.reduceOp, output.dtype(), "nccl reduce_scatter");
  return launch({info(OpType::kReduceScatter, opts.seq, inputs, {output}, opts.timeout, -1, 0,
                      redopName(opts.reduceOp)),
                 {output}, concat({output}, inputs)},
                [=, this](const NcclCall& c) {
                  if (count(output) == 0) return;
                  // Packed on the communication stream (the current one here).
                  Tensor packed = empty({static_cast<int64_t>(size()) * output.numel()},
                                        TensorOptions{output.dtype(), output.device()});
                  c.keep.push_back(packed);
                  auto* dst = static_cast<uint8_t*>(packed.rawData());
                  for (const auto& in : inputs) {
                    copyOnStream(c, dst, in.rawData(), in.nbytes());
                    dst += in.nbytes();
                  }
                  ScopedRedOp op(opts.reduceOp, output.dtype(), c.handle());
                  c.check(ncclReduceScatter(packed.rawData(), output.rawData(), count(output),
                                            type(output), op.get(), c.handle(), c.stream()),
                          "ncclReduceScatter");
                });
}

WorkPtr NcclBackend::reduceScatterTensor(const Tensor& output, const Tensor& input,
                                         const ReduceScatterOptions& opts) {
  checkOp(opts.reduceOp, output.dtype(), "nccl reduce_scatter_tensor");
  return launch({info(OpType::kReduceScatterBase, opts.seq, {input}, {output}, opts.timeout, -1,
                      0, redopName(opts.reduceOp)),
                 {output}, {input, output}},
                [=](const NcclCall& c) {
                  if (count(output) == 0) return;
                  ScopedRedOp op(opts.reduceOp, output.dtype(), c.handle());
                  c.check(ncclReduceScatter(input.rawData(), output.rawData(), count(output),
                                            type(output), op.get(), c.handle(), c.stream()),
                          "ncclReduceScatter");
                });
}

// A one-element allreduce; wait() blocks the host (PyTorch's barrier
// synchronises the device).
WorkPtr NcclBackend::barrier(const BarrierOptions& opts) {
  WorkInfo wi = info(OpType::kBarrier, opts.seq, {}, {}, opts.timeout);
  const int device = deviceOf({}, wi);
  Tensor token = zeros({1}, TensorOptions{DType::kFloat32, Device::cuda(device)});
  Launch op{std::move(wi), {}, {token}, true};
  return launch(std::move(op), [=](const NcclCall& c) {
    c.check(ncclAllReduce(token.rawData(), token.rawData(), 1, ncclFloat32, ncclSum, c.handle(),
                          c.stream()),
            "ncclAllReduce");
  });
}

}  // namespace distlab::comm::nccl_backend
