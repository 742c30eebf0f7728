// NcclBackend operations built from ncclSend/ncclRecv in one NCCL group
// (gather, scatter, all_to_all, all_to_all_single) and point-to-point.
// This rank's own part is a device-to-device copy on the communication stream.
#include <fmt/format.h>

#include "runtime/comm/backends/nccl/nccl_backend.hpp"
#include "runtime/comm/backends/nccl/nccl_util.hpp"
#include "runtime/comm/work_completion.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::comm::nccl_backend {
namespace {

// One side of an exchange with `peer`: a copy when peer is this rank.
struct Transfer {
  const void* send = nullptr;  // null: nothing to send
  void* recv = nullptr;        // null: nothing to receive
  size_t sendCount = 0, recvCount = 0;
};

void exchange(const NcclCall& c, int me, DType dtype, const std::vector<Transfer>& peers) {
  const ncclDataType_t type = ncclType(dtype);
  const size_t elem = elementSize(dtype);
  c.grouped([&] {
    for (int q = 0; q < static_cast<int>(peers.size()); ++q) {
      const Transfer& t = peers[q];
      if (q == me) {
        if (t.send && t.recv && t.sendCount) {
          cuda::check(cudaMemcpyAsync(t.recv, t.send, t.sendCount * elem,
                                      cudaMemcpyDeviceToDevice, c.stream()),
                      "cudaMemcpyAsync", c.comm.device());
        }
        continue;
      }
      if (t.send && t.sendCount)
        c.check(ncclSend(t.send, t.sendCount, type, q, c.handle(), c.stream()), "ncclSend");
      if (t.recv && t.recvCount)
        c.check(ncclRecv(t.recv, t.recvCount, type, q, c.handle(), c.stream()), "ncclRecv");
    }
  });
}

}  // namespace

WorkPtr NcclBackend::gather(const std::vector<Tensor>& outputs, const Tensor& input,
                            const GatherOptions& opts) {
  const int me = rank(), root = opts.rootRank;
  return launch({info(OpType::kGather, opts.seq, {input}, outputs, opts.timeout, root), outputs,
                 concat({input}, outputs)},
                [=, this](const NcclCall& c) {
                  std::vector<Transfer> peers(size());
                  if (me == root) {
                    for (int q = 0; q < size(); ++q)
                      peers[q] = {nullptr, outputs[q].rawData(), 0, count(outputs[q])};
                    peers[me].send = input.rawData();
                    peers[me].sendCount = count(input);
                  } else {
                    peers[root] = {input.rawData(), nullptr, count(input), 0};
                  }
                  exchange(c, me, input.dtype(), peers);
                });
}

WorkPtr NcclBackend::scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                             const ScatterOptions& opts) {
  const int me = rank(), root = opts.rootRank;
  return launch({info(OpType::kScatter, opts.seq, inputs, {output}, opts.timeout, root), {output},
                 concat({output}, inputs)},
                [=, this](const NcclCall& c) {
                  std::vector<Transfer> peers(size());
                  if (me == root) {
                    for (int q = 0; q < size(); ++q)
                      peers[q] = {inputs[q].rawData(), nullptr, count(inputs[q]), 0};
                    peers[me].recv = output.rawData();
                    peers[me].recvCount = count(output);
                  } else {
                    peers[root] = {nullptr, output.rawData(), 0, count(output)};
                  }
                  exchange(c, me, output.dtype(), peers);
                });
}

WorkPtr NcclBackend::alltoall(const std::vector<Tensor>& outputs,
                              const std::vector<Tensor>& inputs, const AllToAllOptions& opts) {
  return launch({info(OpType::kAlltoall, opts.seq, inputs, outputs, opts.timeout), outputs,
                 concat(inputs, outputs)},
                [=, this](const NcclCall& c) {
                  std::vector<Transfer> peers(size());
                  for (int q = 0; q < size(); ++q) {
                    peers[q] = {inputs[q].rawData(), outputs[q].rawData(), count(inputs[q]),
                                count(outputs[q])};
                  }
                  exchange(c, rank(), inputs[rank()].dtype(), peers);
                });
}

WorkPtr NcclBackend::alltoallBase(const Tensor& output, const Tensor& input,
                                  const std::vector<int64_t>& outputSplits,
                                  const std::vector<int64_t>& inputSplits,
                                  const AllToAllOptions& opts) {
  return launch({info(OpType::kAlltoallBase, opts.seq, {input}, {output}, opts.timeout), {output},
                 {input, output}},
                [=, this](const NcclCall& c) {
                  const auto rowElems = [](const Tensor& t) -> size_t {
                    return t.dim() == 0 || t.size(0) == 0 ? 0 : count(t) / static_cast<size_t>(t.size(0));
                  };
                  const size_t inRow = rowElems(input), outRow = rowElems(output);
                  const size_t elem = elementSize(input.dtype());
                  auto* in = static_cast<uint8_t*>(input.rawData());
                  auto* out = static_cast<uint8_t*>(output.rawData());
                  std::vector<Transfer> peers(size());
                  size_t inOff = 0, outOff = 0;
                  for (int q = 0; q < size(); ++q) {
                    const size_t sendN = inputSplits[q] * inRow, recvN = outputSplits[q] * outRow;
                    peers[q] = {in + inOff * elem, out + outOff * elem, sendN, recvN};
                    inOff += sendN;
                    outOff += recvN;
                  }
                  exchange(c, rank(), input.dtype(), peers);
                });
}

WorkPtr NcclBackend::send(const Tensor& tensor, int dstRank, const SendOptions& opts) {
  return launch({info(OpType::kSend, opts.seq, {tensor}, {}, opts.timeout, dstRank, opts.tag),
                 {}, {tensor}},
                [=](const NcclCall& c) {
                  if (count(tensor) == 0) return;  // Note [Empty NCCL calls]
                  c.grouped([&] {
                    c.check(ncclSend(tensor.rawData(), count(tensor), ncclType(tensor.dtype()),
                                     dstRank, c.handle(), c.stream()),
                            "ncclSend");
                  });
                });
}

WorkPtr NcclBackend::recv(const Tensor& tensor, int srcRank, const RecvOptions& opts) {
  WorkPtr work = launch(
      {info(OpType::kRecv, opts.seq, {}, {tensor}, opts.timeout, srcRank, opts.tag), {tensor},
       {tensor}},
      [=](const NcclCall& c) {
        if (count(tensor) == 0) return;
        c.grouped([&] {
          c.check(ncclRecv(tensor.rawData(), count(tensor), ncclType(tensor.dtype()), srcRank,
                           c.handle(), c.stream()),
                  "ncclRecv");
        });
      });
  WorkCompletion::setSourceRank(*work, srcRank);
  return work;
}

}  // namespace distlab::comm::nccl_backend
