// GlooBackend operations: validate what only this backend can see, describe
// the Work, and submit the algorithm (gloo_collectives.cpp / gloo_composed.cpp).
#include <fmt/format.h>

#include <cstring>

#include "runtime/comm/backends/gloo/gloo_backend.hpp"
#include "runtime/comm/backends/gloo/gloo_p2p.hpp"
#include "runtime/comm/op_checks.hpp"
#include "runtime/comm/reduce_kernels.hpp"
#include "runtime/comm/work_completion.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::comm::gloo_backend {
namespace {


void checkCpu(const Tensor& t, std::string_view op) {
  if (t.defined() && !t.device().isCpu()) {
    throw DistBackendError(fmt::format("Backend gloo does not support {} on device {}", op,
                                       t.device().str()));
  }
}

void checkCpu(const std::vector<Tensor>& ts, std::string_view op) {
  for (const auto& t : ts) checkCpu(t, op);
}

std::string redopName(ReduceOp op) { return std::string(reduceOpName(op)); }

// Copies `ts` back to back into `dst`.
void pack(const std::vector<Tensor>& ts, uint8_t* dst) {
  for (const auto& t : ts) {
    if (t.nbytes()) std::memcpy(dst, t.rawData(), t.nbytes());
    dst += t.nbytes();
  }
}

void unpack(const uint8_t* src, const std::vector<Tensor>& ts) {
  for (const auto& t : ts) {
    if (t.nbytes()) std::memcpy(t.rawData(), src, t.nbytes());
    src += t.nbytes();
  }
}

size_t totalBytes(const std::vector<Tensor>& ts) {
  size_t n = 0;
  for (const auto& t : ts) n += t.nbytes();
  return n;
}

}  // namespace

WorkPtr GlooBackend::broadcast(const Tensor& tensor, const BroadcastOptions& opts) {
  checkCpu(tensor, "broadcast");
  return submit(info(OpType::kBroadcast, opts.seq, {tensor}, {tensor}, opts.timeout, opts.rootRank),
                {tensor}, opts.asyncOp, [=](const GlooCall& call) {
                  glooBroadcast(call, tensor.rawData(), tensor.nbytes(), opts.rootRank);
                });
}

WorkPtr GlooBackend::allreduce(const Tensor& tensor, const AllreduceOptions& opts) {
  checkCpu(tensor, "allreduce");
  checkReduceOpSupported(opts.reduceOp, tensor.dtype(), "gloo allreduce");
  return submit(info(OpType::kAllreduce, opts.seq, {tensor}, {tensor}, opts.timeout, -1, 0,
                     redopName(opts.reduceOp)),
                {tensor}, opts.asyncOp, [=](const GlooCall& call) {
                  glooAllreduce(call, tensor.rawData(), tensor.numel(), tensor.dtype(),
                                opts.reduceOp);
                });
}

WorkPtr GlooBackend::allreduceCoalesced(const std::vector<Tensor>& tensors,
                                        const AllreduceCoalescedOptions& opts) {
  checkCpu(tensors, "allreduce_coalesced");
  for (const auto& t : tensors)
    checkReduceOpSupported(opts.reduceOp, t.dtype(), "gloo allreduce_coalesced");
  return submit(info(OpType::kAllreduceCoalesced, opts.seq, tensors, tensors, opts.timeout, -1, 0,
                     redopName(opts.reduceOp)),
                tensors, opts.asyncOp, [=](const GlooCall& call) {
                  std::vector<Region> regions;
                  for (const auto& t : tensors)
                    regions.push_back({t.rawData(), static_cast<size_t>(t.numel()), t.dtype()});
                  composedAllreduceCoalesced(call, regions, opts.reduceOp);
                });
}

WorkPtr GlooBackend::reduce(const Tensor& tensor, const ReduceOptions& opts) {
  checkCpu(tensor, "reduce");
  checkReduceOpSupported(opts.reduceOp, tensor.dtype(), "gloo reduce");
  return submit(info(OpType::kReduce, opts.seq, {tensor}, {tensor}, opts.timeout, opts.rootRank,
                     0, redopName(opts.reduceOp)),
                {tensor}, opts.asyncOp, [=](const GlooCall& call) {
                  glooReduce(call, tensor.rawData(), tensor.numel(), tensor.dtype(),
                             opts.reduceOp, opts.rootRank);
                });
}

WorkPtr GlooBackend::allgather(const std::vector<Tensor>& outputs, const Tensor& input,
                               const AllgatherOptions& opts) {
  checkCpu(input, "allgather");
  checkCpu(outputs, "allgather");
  return submit(info(OpType::kAllgather, opts.seq, {input}, outputs, opts.timeout), outputs,
                opts.asyncOp, [=, this](const GlooCall& call) {
                  std::vector<size_t> bytes;
                  for (const auto& o : outputs) bytes.push_back(o.nbytes());
                  if (bytes[rank()] != input.nbytes()) {
                    throw ValueError(fmt::format(
                        "gloo allgather: output {} has {} bytes but this rank's input has {}",
                        rank(), bytes[rank()], input.nbytes()));
                  }
                  std::vector<uint8_t> flat(totalBytes(outputs));
                  glooAllgatherv(call, input.rawData(), flat.data(), bytes);
                  unpack(flat.data(), outputs);
                });
}

WorkPtr GlooBackend::allgatherIntoTensor(const Tensor& output, const Tensor& input,
                                         const AllgatherOptions& opts) {
  checkCpu(input, "all_gather_into_tensor");
  checkCpu(output, "all_gather_into_tensor");
  return submit(info(OpType::kAllgatherBase, opts.seq, {input}, {output}, opts.timeout), {output},
                opts.asyncOp, [=](const GlooCall& call) {
                  glooAllgather(call, input.rawData(), input.nbytes(), output.rawData());
                });
}

WorkPtr GlooBackend::allgatherCoalesced(const std::vector<std::vector<Tensor>>& outputLists,
                                        const std::vector<Tensor>& inputs,
                                        const AllgatherOptions& opts) {
  checkCpu(inputs, "allgather_coalesced");
  std::vector<Tensor> flatOut;
  for (const auto& l : outputLists) flatOut.insert(flatOut.end(), l.begin(), l.end());
  checkCpu(flatOut, "allgather_coalesced");
  return submit(info(OpType::kAllgatherCoalesced, opts.seq, inputs, flatOut, opts.timeout),
                flatOut, opts.asyncOp, [=, this](const GlooCall& call) {
                  // Rank q's block holds its inputs in list order.
                  std::vector<size_t> bytes(size(), 0);
                  for (const auto& l : outputLists)
                    for (int q = 0; q < size(); ++q) bytes[q] += l[q].nbytes();
                  std::vector<uint8_t> mine(totalBytes(inputs));
                  pack(inputs, mine.data());
                  std::vector<uint8_t> flat(totalBytes(flatOut));
                  glooAllgatherv(call, mine.data(), flat.data(), bytes);
                  const uint8_t* src = flat.data();
                  for (int q = 0; q < size(); ++q) {
                    for (const auto& l : outputLists) {
                      if (l[q].nbytes()) std::memcpy(l[q].rawData(), src, l[q].nbytes());
                      src += l[q].nbytes();
                    }
                  }
                });
}

WorkPtr GlooBackend::gather(const std::vector<Tensor>& outputs, const Tensor& input,
                            const GatherOptions& opts) {
  checkCpu(input, "gather");
  checkCpu(outputs, "gather");
  return submit(info(OpType::kGather, opts.seq, {input}, outputs, opts.timeout, opts.rootRank),
                outputs, opts.asyncOp, [=, this](const GlooCall& call) {
                  std::vector<uint8_t> flat(rank() == opts.rootRank ? input.nbytes() * size() : 0);
                  glooGather(call, input.rawData(), input.nbytes(), flat.data(), opts.rootRank);
                  if (rank() == opts.rootRank) unpack(flat.data(), outputs);
                });
}

WorkPtr GlooBackend::scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                             const ScatterOptions& opts) {
  checkCpu(output, "scatter");
  checkCpu(inputs, "scatter");
  return submit(info(OpType::kScatter, opts.seq, inputs, {output}, opts.timeout, opts.rootRank),
                {output}, opts.asyncOp, [=](const GlooCall& call) {
                  std::vector<const void*> ins;
                  for (const auto& t : inputs) ins.push_back(t.rawData());
                  glooScatter(call, ins, output.rawData(), output.nbytes(), opts.rootRank);
                });
}

WorkPtr GlooBackend::reduceScatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                   const ReduceScatterOptions& opts) {
  checkCpu(output, "reduce_scatter");
  checkCpu(inputs, "reduce_scatter");
  checkReduceOpSupported(opts.reduceOp, output.dtype(), "gloo reduce_scatter");
  return submit(info(OpType::kReduceScatter, opts.seq, inputs, {output}, opts.timeout, -1, 0,
                     redopName(opts.reduceOp)),
                {output}, opts.asyncOp, [=](const GlooCall& call) {
                  std::vector<uint8_t> packed(totalBytes(inputs));
                  pack(inputs, packed.data());
                  composedReduceScatter(call, packed.data(), output.rawData(), output.numel(),
                                        output.dtype(), opts.reduceOp);
                });
}

WorkPtr GlooBackend::reduceScatterTensor(const Tensor& output, const Tensor& input,
                                         const ReduceScatterOptions& opts) {
  checkCpu(output, "reduce_scatter_tensor");
  checkCpu(input, "reduce_scatter_tensor");
  checkReduceOpSupported(opts.reduceOp, output.dtype(), "gloo reduce_scatter_tensor");
  return submit(info(OpType::kReduceScatterBase, opts.seq, {input}, {output}, opts.timeout, -1, 0,
                     redopName(opts.reduceOp)),
                {output}, opts.asyncOp, [=](const GlooCall& call) {
                  composedReduceScatter(call, input.rawData(), output.rawData(), output.numel(),
                                        output.dtype(), opts.reduceOp);
                });
}

WorkPtr GlooBackend::alltoall(const std::vector<Tensor>& outputs,
                              const std::vector<Tensor>& inputs, const AllToAllOptions& opts) {
  checkCpu(outputs, "all_to_all");
  checkCpu(inputs, "all_to_all");
  return submit(info(OpType::kAlltoall, opts.seq, inputs, outputs, opts.timeout), outputs,
                opts.asyncOp, [=](const GlooCall& call) {
                  std::vector<size_t> inBytes, outBytes;
                  for (const auto& t : inputs) inBytes.push_back(t.nbytes());
                  for (const auto& t : outputs) outBytes.push_back(t.nbytes());
                  std::vector<uint8_t> sendBuf(totalBytes(inputs)), recvBuf(totalBytes(outputs));
                  pack(inputs, sendBuf.data());
                  glooAlltoallv(call, sendBuf.data(), inBytes, recvBuf.data(), outBytes);
                  unpack(recvBuf.data(), outputs);
                });
}

WorkPtr GlooBackend::alltoallBase(const Tensor& output, const Tensor& input,
                                  const std::vector<int64_t>& outputSplits,
                                  const std::vector<int64_t>& inputSplits,
                                  const AllToAllOptions& opts) {
  checkCpu(input, "all_to_all_single");
  checkCpu(output, "all_to_all_single");
  return submit(info(OpType::kAlltoallBase, opts.seq, {input}, {output}, opts.timeout), {output},
                opts.asyncOp, [=, this](const GlooCall& call) {
                  const size_t inRow = detail::rowNumel(input) * input.elementSize();
                  const size_t outRow = detail::rowNumel(output) * output.elementSize();
                  std::vector<size_t> inBytes, outBytes;
                  for (int q = 0; q < size(); ++q) {
                    inBytes.push_back(static_cast<size_t>(inputSplits[q]) * inRow);
                    outBytes.push_back(static_cast<size_t>(outputSplits[q]) * outRow);
                  }
                  glooAlltoallv(call, input.rawData(), inBytes, output.rawData(), outBytes);
                });
}

WorkPtr GlooBackend::barrier(const BarrierOptions& opts) {
  return submit(info(OpType::kBarrier, opts.seq, {}, {}, opts.timeout), {}, opts.asyncOp,
                [](const GlooCall& call) { glooBarrier(call); });
}

WorkPtr GlooBackend::send(const Tensor& tensor, int dstRank, const SendOptions& opts) {
  checkCpu(tensor, "send");
  auto work = std::make_shared<Work>(
      info(OpType::kSend, opts.seq, {tensor}, {}, opts.timeout, dstRank, opts.tag),
      std::vector<Tensor>{});
  postP2P(work, [&] { p2p_->send(work, tensor, dstRank, opts.tag, opts.timeout); });
  return work;
}

WorkPtr GlooBackend::recv(const Tensor& tensor, int srcRank, const RecvOptions& opts) {
  checkCpu(tensor, "recv");
  auto work = std::make_shared<Work>(
      info(OpType::kRecv, opts.seq, {}, {tensor}, opts.timeout, srcRank, opts.tag),
      std::vector<Tensor>{tensor});
  postP2P(work, [&] { p2p_->recv(work, tensor, srcRank, opts.tag, opts.timeout); });
  return work;
}

WorkPtr GlooBackend::recvAnysource(const Tensor& tensor, const RecvOptions& opts) {
  checkCpu(tensor, "recv_anysource");
  auto work = std::make_shared<Work>(
      info(OpType::kRecvAnysource, opts.seq, {}, {tensor}, opts.timeout, -1, opts.tag),
      std::vector<Tensor>{tensor});
  postP2P(work, [&] { p2p_->recv(work, tensor, -1, opts.tag, opts.timeout); });
  return work;
}

void GlooBackend::postP2P(const WorkPtr& work, const std::function<void()>& post) {
  if (auto why = errorReason(); why || stopped_.load() || !p2p_) {
    WorkCompletion::finish(*work, refusedWorkError(work->info().describe(), ctx_.groupName,
                                  why.value_or(FailureReason::shutDown())));
    return;
  }
  const auto started = Clock::now();
  try {
    post();
  } catch (...) {
    auto e = translate(std::current_exception(), work->info(), started);
    markFailed(failureReasonOf(e));
    WorkCompletion::finish(*work, e);
  }
}

}  // namespace distlab::comm::gloo_backend
