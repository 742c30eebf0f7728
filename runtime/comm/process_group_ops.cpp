// ProcessGroup's operations: check arguments, number the operation (Note [Issue
// order]), resolve the timeout, dispatch to the backend of the tensors' device.
#include <fmt/format.h>

#include "runtime/comm/op_checks.hpp"
#include "runtime/comm/process_group.hpp"
#include "runtime/comm/reduce_kernels.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/trace.hpp"

namespace distlab::comm {

using detail::checkListSize;
using detail::checkRank;
using detail::checkSameDtype;
using detail::checkTensor;
using detail::checkTensors;

// Common prologue of a collective: membership, arguments (`checks`), backend
// health, then numbering and dispatch under the issue lock.
#define DL_COLLECTIVE(opname, tensorForDevice, checks, call)              \
  checkMember(opname);                                                    \
  checks;                                                                 \
  Backend& backend = backendFor(tensorForDevice, opname);                 \
  std::lock_guard<std::recursive_mutex> issue(issueMutex_);               \
  checkHealthy(backend, opname);                                          \
  opts.timeout = resolveTimeout(opts.timeout);                            \
  opts.seq = nextSeq();                                                   \
  return observe(call)

WorkPtr ProcessGroup::broadcast(const Tensor& tensor, BroadcastOptions opts) {
  DL_COLLECTIVE("broadcast", tensor,
                (checkTensor(tensor, "broadcast", "tensor"),
                 checkRank(opts.rootRank, size(), "broadcast", "root")),
                backend.broadcast(tensor, opts));
}

WorkPtr ProcessGroup::allreduce(const Tensor& tensor, AllreduceOptions opts) {
  DL_COLLECTIVE("all_reduce", tensor,
                (checkTensor(tensor, "all_reduce", "tensor"),
                 checkReduceOpSupported(opts.reduceOp, tensor.dtype(), "all_reduce")),
                backend.allreduce(tensor, opts));
}

WorkPtr ProcessGroup::allreduceCoalesced(const std::vector<Tensor>& tensors,
                                         AllreduceCoalescedOptions opts) {
  const Tensor first = tensors.empty() ? Tensor() : tensors.front();
  DL_COLLECTIVE("all_reduce_coalesced", first, [&] {
                  checkTensors(tensors, "all_reduce_coalesced", "tensors");
                  for (const auto& t : tensors) {
                    checkReduceOpSupported(opts.reduceOp, t.dtype(), "all_reduce_coalesced");
                  }
                }(),
                backend.allreduceCoalesced(tensors, opts));
}

WorkPtr ProcessGroup::reduce(const Tensor& tensor, ReduceOptions opts) {
  DL_COLLECTIVE("reduce", tensor,
                (checkTensor(tensor, "reduce", "tensor"),
                 checkRank(opts.rootRank, size(), "reduce", "dst"),
                 checkReduceOpSupported(opts.reduceOp, tensor.dtype(), "reduce")),
                backend.reduce(tensor, opts));
}

WorkPtr ProcessGroup::allgather(const std::vector<Tensor>& outputs, const Tensor& input,
                                AllgatherOptions opts) {
  DL_COLLECTIVE("all_gather", input, [&] {
                  checkTensor(input, "all_gather", "input");
                  checkListSize(outputs, size(), "all_gather", "output list");
                  checkTensors(outputs, "all_gather", "output list");
                  for (const auto& o : outputs) checkSameDtype(o, input, "all_gather");
                  if (outputs[rank()].numel() != input.numel()) {
                    throw ValueError(fmt::format(
                        "all_gather: output[{}] has {} elements but this rank's input has {}",
                        rank(), outputs[rank()].numel(), input.numel()));
                  }
                }(),
                backend.allgather(outputs, input, opts));
}

WorkPtr ProcessGroup::allgatherIntoTensor(const Tensor& output, const Tensor& input,
                                          AllgatherOptions opts) {
  DL_COLLECTIVE("all_gather_into_tensor", input, [&] {
                  checkTensor(input, "all_gather_into_tensor", "input");
                  checkTensor(output, "all_gather_into_tensor", "output");
                  checkSameDtype(output, input, "all_gather_into_tensor");
                  if (output.numel() != input.numel() * size()) {
                    throw ValueError(fmt::format(
                        "all_gather_into_tensor: output must have world_size ({}) x input numel "
                        "({}) = {} elements, found {} (shape {})",
                        size(), input.numel(), input.numel() * size(), output.numel(),
                        shapeToString(output.sizes())));
                  }
                }(),
                backend.allgatherIntoTensor(output, input, opts));
}

WorkPtr ProcessGroup::allgatherCoalesced(const std::vector<std::vector<Tensor>>& outputLists,
                                         const std::vector<Tensor>& inputs,
                                         AllgatherOptions opts) {
  const Tensor first = inputs.empty() ? Tensor() : inputs.front();
  DL_COLLECTIVE("all_gather_coalesced", first, [&] {
                  checkTensors(inputs, "all_gather_coalesced", "inputs");
                  if (outputLists.size() != inputs.size()) {
                    throw ValueError(fmt::format(
                        "all_gather_coalesced: {} output lists for {} inputs", outputLists.size(),
                        inputs.size()));
                  }
                  for (size_t i = 0; i < inputs.size(); ++i) {
                    checkListSize(outputLists[i], size(), "all_gather_coalesced", "output list");
                    checkTensors(outputLists[i], "all_gather_coalesced", "output list");
                    for (const auto& o : outputLists[i]) {
                      checkSameDtype(o, inputs[i], "all_gather_coalesced");
                    }
                  }
                }(),
                backend.allgatherCoalesced(outputLists, inputs, opts));
}

WorkPtr ProcessGroup::gather(const std::vector<Tensor>& outputs, const Tensor& input,
                             GatherOptions opts) {
  DL_COLLECTIVE("gather", input, [&] {
                  checkTensor(input, "gather", "input");
                  checkRank(opts.rootRank, size(), "gather", "dst");
                  if (rank() == opts.rootRank) {
                    checkListSize(outputs, size(), "gather", "gather_list on the destination");
                    checkTensors(outputs, "gather", "gather_list");
                    for (const auto& o : outputs) {
                      checkSameDtype(o, input, "gather");
                      if (o.numel() != input.numel()) {
                        throw ValueError(fmt::format(
                            "gather: all tensors in gather_list must have the same size as the "
                            "input ({} elements), found {}",
                            input.numel(), o.numel()));
                      }
                    }
                  } else if (!outputs.empty()) {
                    throw ValueError(
                        "gather: gather_list must be empty on non-destination ranks");
                  }
                }(),
                backend.gather(outputs, input, opts));
}

WorkPtr ProcessGroup::scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                              ScatterOptions opts) {
  DL_COLLECTIVE("scatter", output, [&] {
                  checkTensor(output, "scatter", "output");
                  checkRank(opts.rootRank, size(), "scatter", "src");
                  if (rank() == opts.rootRank) {
                    checkListSize(inputs, size(), "scatter", "scatter_list on the source");
                    checkTensors(inputs, "scatter", "scatter_list");
                    for (const auto& in : inputs) {
                      checkSameDtype(in, output, "scatter");
                      if (in.numel() != output.numel()) {
                        throw ValueError(fmt::format(
                            "scatter: all tensors in scatter_list must have the output's size "
                            "({} elements), found {}",
                            output.numel(), in.numel()));
                      }
                    }
                  } else if (!inputs.empty()) {
                    throw ValueError("scatter: scatter_list must be empty on non-source ranks");
                  }
                }(),
                backend.scatter(output, inputs, opts));
}

WorkPtr ProcessGroup::reduceScatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                    ReduceScatterOptions opts) {
  DL_COLLECTIVE("reduce_scatter", output, [&] {
                  checkTensor(output, "reduce_scatter", "output");
                  checkListSize(inputs, size(), "reduce_scatter", "input list");
                  checkTensors(inputs, "reduce_scatter", "input list");
                  checkReduceOpSupported(opts.reduceOp, output.dtype(), "reduce_scatter");
                  for (const auto& in : inputs) {
                    checkSameDtype(in, output, "reduce_scatter");
                    if (in.numel() != output.numel()) {
                      throw ValueError(fmt::format(
                          "reduce_scatter: every input must have the output's size ({} "
                          "elements), found {}",
                          output.numel(), in.numel()));
                    }
                  }
                }(),
                backend.reduceScatter(output, inputs, opts));
}

WorkPtr ProcessGroup::reduceScatterTensor(const Tensor& output, const Tensor& input,
                                          ReduceScatterOptions opts) {
  DL_COLLECTIVE("reduce_scatter_tensor", output, [&] {
                  checkTensor(output, "reduce_scatter_tensor", "output");
                  checkTensor(input, "reduce_scatter_tensor", "input");
                  checkSameDtype(output, input, "reduce_scatter_tensor");
                  checkReduceOpSupported(opts.reduceOp, output.dtype(), "reduce_scatter_tensor");
                  if (input.numel() != output.numel() * size()) {
                    throw ValueError(fmt::format(
                        "reduce_scatter_tensor: input must have world_size ({}) x output numel "
                        "({}) = {} elements, found {}",
                        size(), output.numel(), output.numel() * size(), input.numel()));
                  }
                }(),
                backend.reduceScatterTensor(output, input, opts));
}

WorkPtr ProcessGroup::alltoall(const std::vector<Tensor>& outputs,
                               const std::vector<Tensor>& inputs, AllToAllOptions opts) {
  const Tensor first = inputs.empty() ? Tensor() : inputs.front();
  DL_COLLECTIVE("all_to_all", first, [&] {
                  checkListSize(inputs, size(), "all_to_all", "input list");
                  checkListSize(outputs, size(), "all_to_all", "output list");
                  checkTensors(inputs, "all_to_all", "input list");
                  checkTensors(outputs, "all_to_all", "output list");
                  for (int q = 0; q < size(); ++q) checkSameDtype(outputs[q], inputs[0], "all_to_all");
                  for (int q = 0; q < size(); ++q) checkSameDtype(inputs[q], inputs[0], "all_to_all");
                }(),
                backend.alltoall(outputs, inputs, opts));
}

WorkPtr ProcessGroup::alltoallSingle(const Tensor& output, const Tensor& input,
                                     std::vector<int64_t> outputSplits,
                                     std::vector<int64_t> inputSplits, AllToAllOptions opts) {
  DL_COLLECTIVE("all_to_all_single", input, [&] {
                  checkTensor(input, "all_to_all_single", "input");
                  checkTensor(output, "all_to_all_single", "output");
                  checkSameDtype(output, input, "all_to_all_single");
                  detail::resolveSplits(outputSplits, output, size(), "output_split_sizes");
                  detail::resolveSplits(inputSplits, input, size(), "input_split_sizes");
                  if (detail::rowNumel(input) != detail::rowNumel(output)) {
                    throw ValueError(fmt::format(
                        "all_to_all_single: input rows have {} elements but output rows {}",
                        detail::rowNumel(input), detail::rowNumel(output)));
                  }
                }(),
                backend.alltoallBase(output, input, outputSplits, inputSplits, opts));
}

WorkPtr ProcessGroup::barrier(BarrierOptions opts) {
  DL_COLLECTIVE("barrier", Tensor(), (void)0, backend.barrier(opts));
}

#undef DL_COLLECTIVE

// ---- point to point ------------------------------------------------------------------

WorkPtr ProcessGroup::isend(const Tensor& tensor, int dstRank, SendOptions opts) {
  checkMember("isend");
  checkTensor(tensor, "send", "tensor");
  checkPeer(dstRank, "send");
  if (opts.tag < 0) throw ValueError(fmt::format("send: tag {} must be >= 0", opts.tag));
  Backend& backend = backendFor(tensor, "send");
  std::lock_guard<std::recursive_mutex> issue(issueMutex_);
  checkHealthy(backend, "send");
  opts.timeout = resolveTimeout(opts.timeout);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    opts.seq = ++sendCounts_[dstRank];
  }
  return observe(backend.send(tensor, dstRank, opts));
}

WorkPtr ProcessGroup::irecv(const Tensor& tensor, int srcRank, RecvOptions opts) {
  checkMember("irecv");
  checkTensor(tensor, "recv", "tensor");
  checkPeer(srcRank, "recv");
  if (opts.tag < 0) throw ValueError(fmt::format("recv: tag {} must be >= 0", opts.tag));
  Backend& backend = backendFor(tensor, "recv");
  std::lock_guard<std::recursive_mutex> issue(issueMutex_);
  checkHealthy(backend, "recv");
  opts.timeout = resolveTimeout(opts.timeout);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    opts.seq = ++recvCounts_[srcRank];
  }
  return observe(backend.recv(tensor, srcRank, opts));
}

WorkPtr ProcessGroup::irecvAnysource(const Tensor& tensor, RecvOptions opts) {
  checkMember("irecv");
  checkTensor(tensor, "recv", "tensor");
  if (opts.tag < 0) throw ValueError(fmt::format("recv: tag {} must be >= 0", opts.tag));
  Backend& backend = backendFor(tensor, "recv");
  std::lock_guard<std::recursive_mutex> issue(issueMutex_);
  checkHealthy(backend, "recv");
  opts.timeout = resolveTimeout(opts.timeout);
  opts.seq = 0;
  return observe(backend.recvAnysource(tensor, opts));
}

void ProcessGroup::send(const Tensor& tensor, int dstRank, SendOptions opts) {
  if (member_ && dstRank == rank()) {
    throw ValueError(fmt::format(
        "send: destination rank {} is the current rank; use isend to send to self", dstRank));
  }
  auto work = isend(tensor, dstRank, opts);
  // The time blocked, apart from the caller's own work (what a trace reader
  // such as emulator/predict must not take for compute).
  trace::Span wait(trace::Category::kWait, "wait for send");
  work->wait();
}

int ProcessGroup::recv(const Tensor& tensor, int srcRank, RecvOptions opts) {
  if (member_ && srcRank == rank()) {
    throw ValueError(fmt::format(
        "recv: source rank {} is the current rank; use irecv to receive from self", srcRank));
  }
  auto work = irecv(tensor, srcRank, opts);
  trace::Span wait(trace::Category::kWait, "wait for recv");  // as in send
  work->wait();
  return work->sourceRank();
}

int ProcessGroup::recvAnysource(const Tensor& tensor, RecvOptions opts) {
  auto work = irecvAnysource(tensor, opts);
  work->wait();
  return work->sourceRank();
}

std::vector<WorkPtr> ProcessGroup::batchIsendIrecv(const std::vector<P2POp>& ops) {
  if (ops.empty()) throw ValueError("batch_isend_irecv: the op list is empty");
  std::lock_guard<std::recursive_mutex> issue(issueMutex_);
  std::vector<WorkPtr> works;
  for (const auto& op : ops) {
    if (op.op == P2POp::kIsend) {
      works.push_back(isend(op.tensor, op.peer, SendOptions{.tag = op.tag}));
    } else {
      works.push_back(irecv(op.tensor, op.peer, RecvOptions{.tag = op.tag}));
    }
  }
  return works;
}

}  // namespace distlab::comm
