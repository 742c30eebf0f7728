// ShmBackend operations: build the descriptor, pick the algorithm, submit.
#include <fmt/format.h>

#include "runtime/comm/backends/shm/shm_algorithm_selector.hpp"
#include "runtime/comm/backends/shm/shm_algorithms.hpp"
#include "runtime/comm/backends/shm/shm_backend.hpp"
#include "runtime/comm/backends/shm/shm_eager.hpp"
#include "runtime/comm/op_checks.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::comm::shm {
namespace {

uint8_t* bytesOf(const Tensor& t) { return static_cast<uint8_t*>(t.rawData()); }
uint64_t u64(size_t v) { return static_cast<uint64_t>(v); }

// ShmOp's counts: what this rank sends to each rank, then what it expects.
std::vector<uint64_t> concat(const std::vector<uint64_t>& sends,
                             const std::vector<uint64_t>& expects) {
  std::vector<uint64_t> out(sends);
  out.insert(out.end(), expects.begin(), expects.end());
  return out;
}

void checkCpu(const Tensor& t, std::string_view op) {
  if (t.defined() && !t.device().isCpu()) {
    throw DistBackendError(fmt::format("Backend shm does not support {} on device {}", op,
                                       t.device().str()));
  }
}

}  // namespace

WorkPtr ShmBackend::broadcast(const Tensor& tensor, const BroadcastOptions& opts) {
  checkCpu(tensor, "broadcast");
  return submit(InPlace{[&] {
                  return infoInPlace(OpType::kBroadcast, opts.seq, opts.timeout, opts.rootRank);
                }},
                tensor, opts.asyncOp, [=, this] {
                  const OpDesc desc = makeDesc(opts.seq, OpType::kBroadcast, tensor.dtype(), {},
                                               opts.rootRank, tensor.nbytes(), tensor.rawData());
                  const bool singleCopy =
                      group_.singleCopyBroadcast && singleCopyFor(tensor.nbytes());
                  if (!singleCopy && eagerFits(group_, OpType::kBroadcast, tensor.nbytes())) {
                    EagerOp op(group_, desc, EagerShape::kRootWrites, opts.timeout);
                    return broadcastEager(op, bytesOf(tensor), tensor.nbytes());
                  }
                  ShmOp op(group_, desc, true, opts.timeout);
                  if (!singleCopy) {
                    broadcastChunked(op, bytesOf(tensor), tensor.nbytes(), opts.rootRank);
                    return;
                  }
                  std::vector<uint8_t*> outs;  // the root receives nothing
                  if (rank() != opts.rootRank) {
                    outs.assign(size(), nullptr);
                    outs[opts.rootRank] = bytesOf(tensor);
                  }
                  gatherSingleCopy(op, bytesOf(tensor), outs);
                });
}

WorkPtr ShmBackend::allreduce(const Tensor& tensor, const AllreduceOptions& opts) {
  checkCpu(tensor, "allreduce");
  return submit(InPlace{[&] {
                  return infoInPlace(OpType::kAllreduce, opts.seq, opts.timeout, -1,
                                     reduceOpName(opts.reduceOp));
                }},
                tensor, opts.asyncOp, [=, this] {
                  // Each read once: a Tensor accessor checks and recomputes.
                  const DType dtype = tensor.dtype();
                  const uint64_t count = u64(tensor.numel());
                  const uint64_t bytes = count * elementSize(dtype);
                  uint8_t* data = bytesOf(tensor);
                  ShmOp op(group_,
                           makeDesc(opts.seq, OpType::kAllreduce, dtype, opts.reduceOp, -1, bytes,
                                    data),
                           true, opts.timeout);
                  switch (allreduceAlgoFor(bytes)) {
                    case AllreduceAlgo::kDirect:
                      return allreduceDirect(op, data, count, dtype, opts.reduceOp);
                    case AllreduceAlgo::kRsAg:
                      return allreduceRsAg(op, data, count, dtype, opts.reduceOp);
                    case AllreduceAlgo::kSingleCopy:
                      return allreduceSingleCopy(op, data, count, dtype, opts.reduceOp);
                  }
                });
}

WorkPtr ShmBackend::allreduceCoalesced(const std::vector<Tensor>& tensors,
                                       const AllreduceCoalescedOptions& opts) {
  for (const auto& t : tensors) checkCpu(t, "allreduce_coalesced");
  return submit(info(OpType::kAllreduceCoalesced, opts.seq, tensors, tensors, opts.timeout, -1, 0,
                     std::string(reduceOpName(opts.reduceOp))),
                tensors, opts.asyncOp, [=, this] {
                  // One descriptor-checked pass per tensor, all under the same seq.
                  for (const auto& t : tensors) {
                    ShmOp op(group_, makeDesc(opts.seq, OpType::kAllreduceCoalesced, t.dtype(),
                                              opts.reduceOp, -1, t.nbytes()),
                             true, opts.timeout);
                    allreduceDirect(op, bytesOf(t), u64(t.numel()), t.dtype(), opts.reduceOp);
                  }
                  if (tensors.empty()) {
                    ShmOp op(group_, makeDesc(opts.seq, OpType::kAllreduceCoalesced,
                                              DType::kUInt8, opts.reduceOp, -1, 0),
                             true, opts.timeout);
                    op.sync();
                  }
                });
}

WorkPtr ShmBackend::reduce(const Tensor& tensor, const ReduceOptions& opts) {
  checkCpu(tensor, "reduce");
  return submit(InPlace{[&] {
                  return infoInPlace(OpType::kReduce, opts.seq, opts.timeout, opts.rootRank,
                                     reduceOpName(opts.reduceOp));
                }},
                tensor, opts.asyncOp, [=, this] {
                  const OpDesc desc = makeDesc(opts.seq, OpType::kReduce, tensor.dtype(),
                                               opts.reduceOp, opts.rootRank, tensor.nbytes());
                  if (eagerFits(group_, OpType::kReduce, tensor.nbytes())) {
                    EagerOp op(group_, desc, EagerShape::kLeavesWrite, opts.timeout);
                    return reduceEager(op, bytesOf(tensor), u64(tensor.numel()), tensor.dtype(),
                                       opts.reduceOp);
                  }
                  ShmOp op(group_, desc, true, opts.timeout);
                  reduceDirect(op, bytesOf(tensor), u64(tensor.numel()), tensor.dtype(),
                               opts.reduceOp, opts.rootRank);
                });
}

WorkPtr ShmBackend::allgather(const std::vector<Tensor>& outputs, const Tensor& input,
                              const AllgatherOptions& opts) {
  checkCpu(input, "allgather");
  return submit(info(OpType::kAllgather, opts.seq, {input}, outputs, opts.timeout), outputs,
                opts.asyncOp, [=, this] {
                  allgatherInto(OpType::kAllgather, opts, input, outputs);
                });
}

// One all-gather into a list of outputs (sizes may differ per rank: the
// descriptors' counts cross-check them). The single-copy choice counts the
// outputs' bytes, which every rank agrees on once the counts check passed (and
// when it fails, both paths fail at their first sync).
void ShmBackend::allgatherInto(OpType type, const AllgatherOptions& opts, const Tensor& input,
                               const std::vector<Tensor>& outputs) {
  OpDesc d = makeDesc(opts.seq, type, input.dtype(), {}, -1, input.nbytes(), input.rawData());
  d.hasCounts = 1;
  std::vector<uint8_t*> outs;
  std::vector<uint64_t> counts(2 * size());
  uint64_t outBytes = 0;
  for (int q = 0; q < size(); ++q) {
    counts[q] = input.nbytes();
    counts[size() + q] = outputs[q].nbytes();
    outs.push_back(bytesOf(outputs[q]));
    outBytes += outputs[q].nbytes();
  }
  ShmOp op(group_, d, false, opts.timeout, counts);
  gatherInto(op, bytesOf(input), input.nbytes(), outs, singleCopyAllgathersFor(outBytes));
}

void ShmBackend::gatherInto(ShmOp& op, const uint8_t* in, uint64_t inBytes,
                            const std::vector<uint8_t*>& outs, bool inPlace) {
  if (inPlace) {
    gatherSingleCopy(op, in, outs);
  } else {
    allgatherChunked(op, in, inBytes, outs);
  }
}

WorkPtr ShmBackend::allgatherIntoTensor(const Tensor& output, const Tensor& input,
                                        const AllgatherOptions& opts) {
  checkCpu(input, "all_gather_into_tensor");
  return submit(info(OpType::kAllgatherBase, opts.seq, {input}, {output}, opts.timeout), output,
                opts.asyncOp, [=, this] {
                  ShmOp op(group_, makeDesc(opts.seq, OpType::kAllgatherBase, input.dtype(), {},
                                            -1, input.nbytes(), input.rawData()),
                           true, opts.timeout);
                  std::vector<uint8_t*> outs;
                  for (int q = 0; q < size(); ++q) outs.push_back(bytesOf(output) + q * input.nbytes());
                  gatherInto(op, bytesOf(input), input.nbytes(), outs,
                             singleCopyAllgathersFor(output.nbytes()));
                });
}

WorkPtr ShmBackend::allgatherCoalesced(const std::vector<std::vector<Tensor>>& outputLists,
                                       const std::vector<Tensor>& inputs,
                                       const AllgatherOptions& opts) {
  std::vector<Tensor> flat;
  for (const auto& l : outputLists) flat.insert(flat.end(), l.begin(), l.end());
  return submit(info(OpType::kAllgatherCoalesced, opts.seq, inputs, flat, opts.timeout), flat,
                opts.asyncOp, [=, this] {
                  for (size_t i = 0; i < inputs.size(); ++i) {
                    allgatherInto(OpType::kAllgatherCoalesced, opts, inputs[i], outputLists[i]);
                  }
                  if (inputs.empty()) {
                    ShmOp op(group_, makeDesc(opts.seq, OpType::kAllgatherCoalesced,
                                              DType::kUInt8, {}, -1, 0),
                             true, opts.timeout);
                    op.sync();
                  }
                });
}

WorkPtr ShmBackend::gather(const std::vector<Tensor>& outputs, const Tensor& input,
                           const GatherOptions& opts) {
  checkCpu(input, "gather");
  return submit(info(OpType::kGather, opts.seq, {input}, outputs, opts.timeout, opts.rootRank),
                outputs, opts.asyncOp, [=, this] {
                  const OpDesc desc = makeDesc(opts.seq, OpType::kGather, input.dtype(), {},
                                               opts.rootRank, input.nbytes(), input.rawData());
                  std::vector<uint8_t*> outs;
                  for (const auto& o : outputs) outs.push_back(bytesOf(o));
                  const uint64_t total = input.nbytes() * u64(size());
                  // Note [shm single copy]: a gather keeps the reductions' rule.
                  const bool inPlace = singleCopyFor(total);
                  if (!inPlace && eagerFits(group_, OpType::kGather, input.nbytes())) {
                    EagerOp op(group_, desc, EagerShape::kLeavesWrite, opts.timeout);
                    return gatherEager(op, bytesOf(input), input.nbytes(), outs);
                  }
                  ShmOp op(group_, desc, true, opts.timeout);
                  gatherInto(op, bytesOf(input), input.nbytes(), outs, inPlace);
                });
}

WorkPtr ShmBackend::scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                            const ScatterOptions& opts) {
  checkCpu(output, "scatter");
  return submit(info(OpType::kScatter, opts.seq, inputs, {output}, opts.timeout, opts.rootRank),
                output, opts.asyncOp, [=, this] {
                  const OpDesc desc = makeDesc(opts.seq, OpType::kScatter, output.dtype(), {},
                                               opts.rootRank, output.nbytes());
                  std::vector<const uint8_t*> ins;
                  for (const auto& t : inputs) ins.push_back(bytesOf(t));
                  if (eagerFits(group_, OpType::kScatter, output.nbytes())) {
                    EagerOp op(group_, desc, EagerShape::kRootWrites, opts.timeout);
                    return scatterEager(op, ins, bytesOf(output), output.nbytes());
                  }
                  ShmOp op(group_, desc, true, opts.timeout);
                  scatterChunked(op, ins, bytesOf(output), output.nbytes(), opts.rootRank);
                });
}

WorkPtr ShmBackend::reduceScatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                  const ReduceScatterOptions& opts) {
  checkCpu(output, "reduce_scatter");
  return submit(info(OpType::kReduceScatter, opts.seq, inputs, {output}, opts.timeout, -1, 0,
                     std::string(reduceOpName(opts.reduceOp))),
                output, opts.asyncOp, [=, this] {
                  ShmOp op(group_, makeDesc(opts.seq, OpType::kReduceScatter, output.dtype(),
                                            opts.reduceOp, -1, output.nbytes()),
                           true, opts.timeout);
                  std::vector<const uint8_t*> ins;
                  for (const auto& t : inputs) ins.push_back(bytesOf(t));
                  reduceScatterParts(op, ins, bytesOf(output), u64(output.numel()),
                                     output.dtype(), opts.reduceOp);
                });
}

WorkPtr ShmBackend::reduceScatterTensor(const Tensor& output, const Tensor& input,
                                        const ReduceScatterOptions& opts) {
  checkCpu(output, "reduce_scatter_tensor");
  return submit(info(OpType::kReduceScatterBase, opts.seq, {input}, {output}, opts.timeout, -1, 0,
                     std::string(reduceOpName(opts.reduceOp))),
                output, opts.asyncOp, [=, this] {
                  ShmOp op(group_, makeDesc(opts.seq, OpType::kReduceScatterBase, output.dtype(),
                                            opts.reduceOp, -1, output.nbytes(), input.rawData()),
                           true, opts.timeout);
                  if (singleCopyFor(input.nbytes())) {
                    reduceScatterSingleCopy(op, bytesOf(input), bytesOf(output),
                                            u64(output.numel()), output.dtype(), opts.reduceOp);
                    return;
                  }
                  std::vector<const uint8_t*> ins;
                  for (int q = 0; q < size(); ++q) ins.push_back(bytesOf(input) + q * output.nbytes());
                  reduceScatterParts(op, ins, bytesOf(output), u64(output.numel()),
                                     output.dtype(), opts.reduceOp);
                });
}

WorkPtr ShmBackend::alltoall(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                             const AllToAllOptions& opts) {
  return submit(info(OpType::kAlltoall, opts.seq, inputs, outputs, opts.timeout), outputs,
                opts.asyncOp, [=, this] {
                  OpDesc d = makeDesc(opts.seq, OpType::kAlltoall, inputs[0].dtype(), {}, -1, 0);
                  d.hasCounts = 1;
                  std::vector<const uint8_t*> sends;
                  std::vector<uint8_t*> recvs;
                  std::vector<uint64_t> sendBytes, recvBytes;
                  for (int q = 0; q < size(); ++q) {
                    sends.push_back(bytesOf(inputs[q]));
                    recvs.push_back(bytesOf(outputs[q]));
                    sendBytes.push_back(inputs[q].nbytes());
                    recvBytes.push_back(outputs[q].nbytes());
                  }
                  const std::vector<uint64_t> counts = concat(sendBytes, recvBytes);
                  ShmOp op(group_, d, false, opts.timeout, counts);
                  alltoallParts(op, sends, sendBytes, recvs, recvBytes);
                });
}

WorkPtr ShmBackend::alltoallBase(const Tensor& output, const Tensor& input,
                                 const std::vector<int64_t>& outputSplits,
                                 const std::vector<int64_t>& inputSplits,
                                 const AllToAllOptions& opts) {
  checkCpu(input, "all_to_all_single");
  return submit(info(OpType::kAlltoallBase, opts.seq, {input}, {output}, opts.timeout), output,
                opts.asyncOp, [=, this] {
                  const uint64_t row = u64(detail::rowNumel(input)) * input.elementSize();
                  OpDesc d = makeDesc(opts.seq, OpType::kAlltoallBase, input.dtype(), {}, -1, 0);
                  d.hasCounts = 1;
                  std::vector<const uint8_t*> sends;
                  std::vector<uint8_t*> recvs;
                  std::vector<uint64_t> sendBytes, recvBytes;
                  uint64_t inOff = 0, outOff = 0;
                  for (int q = 0; q < size(); ++q) {
                    sendBytes.push_back(u64(inputSplits[q]) * row);
                    recvBytes.push_back(u64(outputSplits[q]) * row);
                    sends.push_back(bytesOf(input) + inOff);
                    recvs.push_back(bytesOf(output) + outOff);
                    inOff += sendBytes.back();
                    outOff += recvBytes.back();
                  }
                  const std::vector<uint64_t> counts = concat(sendBytes, recvBytes);
                  ShmOp op(group_, d, false, opts.timeout, counts);
                  alltoallParts(op, sends, sendBytes, recvs, recvBytes);
                });
}

WorkPtr ShmBackend::barrier(const BarrierOptions& opts) {
  return submit(info(OpType::kBarrier, opts.seq, {}, {}, opts.timeout), std::vector<Tensor>{},
                opts.asyncOp, [=, this] {
                  ShmOp op(group_, makeDesc(opts.seq, OpType::kBarrier, DType::kUInt8, {}, -1, 0),
                           true, opts.timeout);
                  op.sync();
                });
}

WorkPtr ShmBackend::send(const Tensor& tensor, int dstRank, const SendOptions& opts) {
  checkCpu(tensor, "send");
  auto work = std::make_shared<Work>(
      info(OpType::kSend, opts.seq, {tensor}, {}, opts.timeout, dstRank, opts.tag), std::vector<Tensor>{tensor});
  p2p_->postSend(work, tensor, dstRank, opts.tag, opts.seq, opts.timeout);
  return work;
}

WorkPtr ShmBackend::recv(const Tensor& tensor, int srcRank, const RecvOptions& opts) {
  checkCpu(tensor, "recv");
  auto work = std::make_shared<Work>(
      info(OpType::kRecv, opts.seq, {}, {tensor}, opts.timeout, srcRank, opts.tag), std::vector<Tensor>{tensor});
  p2p_->postRecv(work, tensor, srcRank, opts.tag, opts.timeout);
  return work;
}

WorkPtr ShmBackend::recvAnysource(const Tensor& tensor, const RecvOptions& opts) {
  checkCpu(tensor, "recv from any source");
  auto work = std::make_shared<Work>(
      info(OpType::kRecvAnysource, opts.seq, {}, {tensor}, opts.timeout, -1, opts.tag), std::vector<Tensor>{tensor});
  p2p_->postRecv(work, tensor, -1, opts.tag, opts.timeout);
  return work;
}

}  // namespace distlab::comm::shm
