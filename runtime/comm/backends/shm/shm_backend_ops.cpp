// ShmBackend operations: build the descriptor, pick the algorithm, submit.
#include <fmt/format.h>

#include "runtime/comm/backends/shm/shm_algorithm_selector.hpp"
#include "runtime/comm/backends/shm/shm_algorithms.hpp"
#include "runtime/comm/backends/shm/shm_backend.hpp"
#include "runtime/comm/backends/shm/shm_eager.hpp"
#include "runtime/comm/op_checks.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/inline_vector.hpp"

namespace distlab::comm::shm {
namespace {

uint8_t* bytesOf(const Tensor& t) { return static_cast<uint8_t*>(t.rawData()); }
uint64_t u64(size_t v) { return static_cast<uint64_t>(v); }

// One tensor as a list of one, without building a vector.
std::span<const Tensor> one(const Tensor& t) { return {&t, 1}; }

// An operation's per-rank buffers, and ShmOp's counts (what this rank sends to
// each rank, then what it expects from each): inline up to the group sizes of
// one machine, so that a small operation allocates nothing for them (Note
// [Per-operation cost] in work.hpp).
template <typename T>
using PerRank = InlineVector<T, 8>;
using Counts = InlineVector<uint64_t, 16>;

void checkCpu(const Tensor& t, std::string_view op) {
  if (t.defined() && !t.device().isCpu()) {
    throw DistBackendError(fmt::format("Backend shm does not support {} on device {}", op,
                                       t.device().str()));
  }
}

}  // namespace

WorkPtr ShmBackend::broadcast(const Tensor& tensor, const BroadcastOptions& opts) {
  checkCpu(tensor, "broadcast");
  return submit(
      InPlace{[&] {
        return infoInPlace(OpType::kBroadcast, opts.seq, opts.timeout, opts.rootRank);
      }},
      tensor, opts.asyncOp,
      [this, opts](const Tensor& t) {
        const OpDesc desc = makeDesc(opts.seq, OpType::kBroadcast, t.dtype(), {}, opts.rootRank,
                                     t.nbytes(), t.rawData());
        const bool singleCopy = group_.singleCopyBroadcast && singleCopyFor(t.nbytes());
        if (!singleCopy && eagerFits(group_, OpType::kBroadcast, t.nbytes())) {
          EagerOp op(group_, desc, EagerShape::kRootWrites, opts.timeout);
          return broadcastEager(op, bytesOf(t), t.nbytes());
        }
        ShmOp op(group_, desc, true, opts.timeout);
        if (!singleCopy) {
          broadcastChunked(op, bytesOf(t), t.nbytes(), opts.rootRank);
          return;
        }
        std::vector<uint8_t*> outs;  // the root receives nothing
        if (rank() != opts.rootRank) {
          outs.assign(size(), nullptr);
          outs[opts.rootRank] = bytesOf(t);
        }
        gatherSingleCopy(op, bytesOf(t), outs);
      },
      tensor);
}

WorkPtr ShmBackend::allreduce(const Tensor& tensor, const AllreduceOptions& opts) {
  checkCpu(tensor, "allreduce");
  return submit(
      InPlace{[&] {
        return infoInPlace(OpType::kAllreduce, opts.seq, opts.timeout, -1,
                           reduceOpName(opts.reduceOp));
      }},
      tensor, opts.asyncOp,
      [this, opts](const Tensor& t) {
        // Each read once: a Tensor accessor checks and recomputes.
        const DType dtype = t.dtype();
        const uint64_t count = u64(t.numel());
        const uint64_t bytes = count * elementSize(dtype);
        uint8_t* data = bytesOf(t);
        ShmOp op(group_,
                 makeDesc(opts.seq, OpType::kAllreduce, dtype, opts.reduceOp, -1, bytes, data),
                 true, opts.timeout);
        switch (allreduceAlgoFor(bytes)) {
          case AllreduceAlgo::kDirect:
            return allreduceDirect(op, data, count, dtype, opts.reduceOp);
          case AllreduceAlgo::kRsAg:
            return allreduceRsAg(op, data, count, dtype, opts.reduceOp);
          case AllreduceAlgo::kSingleCopy:
            return allreduceSingleCopy(op, data, count, dtype, opts.reduceOp);
        }
      },
      tensor);
}

WorkPtr ShmBackend::allreduceCoalesced(const std::vector<Tensor>& tensors,
                                       const AllreduceCoalescedOptions& opts) {
  for (const auto& t : tensors) checkCpu(t, "allreduce_coalesced");
  return submit(
      [&] {
        return info(OpType::kAllreduceCoalesced, opts.seq, tensors, tensors, opts.timeout, -1, 0,
                    reduceOpName(opts.reduceOp));
      },
      tensors, opts.asyncOp,
      [this, opts](const std::vector<Tensor>& ts) {
        // One descriptor-checked pass per tensor, all under the same seq.
        for (const auto& t : ts) {
          ShmOp op(group_,
                   makeDesc(opts.seq, OpType::kAllreduceCoalesced, t.dtype(), opts.reduceOp, -1,
                            t.nbytes()),
                   true, opts.timeout);
          allreduceDirect(op, bytesOf(t), u64(t.numel()), t.dtype(), opts.reduceOp);
        }
        if (ts.empty()) {
          ShmOp op(group_,
                   makeDesc(opts.seq, OpType::kAllreduceCoalesced, DType::kUInt8, opts.reduceOp,
                            -1, 0),
                   true, opts.timeout);
          op.sync();
        }
      },
      tensors);
}

WorkPtr ShmBackend::reduce(const Tensor& tensor, const ReduceOptions& opts) {
  checkCpu(tensor, "reduce");
  return submit(
      InPlace{[&] {
        return infoInPlace(OpType::kReduce, opts.seq, opts.timeout, opts.rootRank,
                           reduceOpName(opts.reduceOp));
      }},
      tensor, opts.asyncOp,
      [this, opts](const Tensor& t) {
        const OpDesc desc = makeDesc(opts.seq, OpType::kReduce, t.dtype(), opts.reduceOp,
                                     opts.rootRank, t.nbytes());
        if (eagerFits(group_, OpType::kReduce, t.nbytes())) {
          EagerOp op(group_, desc, EagerShape::kLeavesWrite, opts.timeout);
          return reduceEager(op, bytesOf(t), u64(t.numel()), t.dtype(), opts.reduceOp);
        }
        ShmOp op(group_, desc, true, opts.timeout);
        reduceDirect(op, bytesOf(t), u64(t.numel()), t.dtype(), opts.reduceOp, opts.rootRank);
      },
      tensor);
}

WorkPtr ShmBackend::allgather(const std::vector<Tensor>& outputs, const Tensor& input,
                              const AllgatherOptions& opts) {
  checkCpu(input, "allgather");
  return submit(
      [&] { return info(OpType::kAllgather, opts.seq, one(input), outputs, opts.timeout); },
      outputs, opts.asyncOp,
      [this, opts](const std::vector<Tensor>& outs, const Tensor& in) {
        allgatherInto(OpType::kAllgather, opts, in, outs);
      },
      outputs, input);
}

// One all-gather into a list of outputs (sizes may differ per rank: the
// descriptors' counts cross-check them). The single-copy choice counts the
// outputs' bytes, which every rank agrees on once the counts check passed (and
// when it fails, both paths fail at their first sync).
void ShmBackend::allgatherInto(OpType type, const AllgatherOptions& opts, const Tensor& input,
                               const std::vector<Tensor>& outputs) {
  const uint64_t inBytes = input.nbytes();
  OpDesc d = makeDesc(opts.seq, type, input.dtype(), {}, -1, inBytes, input.rawData());
  d.hasCounts = 1;
  PerRank<uint8_t*> outs;
  Counts counts;
  uint64_t outBytes = 0;
  for (int q = 0; q < size(); ++q) counts.push_back(inBytes);
  for (int q = 0; q < size(); ++q) {
    counts.push_back(outputs[q].nbytes());
    outs.push_back(bytesOf(outputs[q]));
    outBytes += outputs[q].nbytes();
  }
  ShmOp op(group_, d, false, opts.timeout, counts.span());
  gatherInto(op, bytesOf(input), inBytes, outs.span(), singleCopyAllgathersFor(outBytes));
}

void ShmBackend::gatherInto(ShmOp& op, const uint8_t* in, uint64_t inBytes,
                            std::span<uint8_t* const> outs, bool inPlace, int root) {
  if (inPlace) {
    gatherSingleCopy(op, in, outs);
  } else {
    allgatherChunked(op, in, inBytes, outs, rank() != root);
  }
}

WorkPtr ShmBackend::allgatherIntoTensor(const Tensor& output, const Tensor& input,
                                        const AllgatherOptions& opts) {
  checkCpu(input, "all_gather_into_tensor");
  return submit(
      [&] { return info(OpType::kAllgatherBase, opts.seq, one(input), one(output), opts.timeout); },
      output, opts.asyncOp,
      [this, opts](const Tensor& out, const Tensor& in) {
        const uint64_t inBytes = in.nbytes();
        ShmOp op(group_,
                 makeDesc(opts.seq, OpType::kAllgatherBase, in.dtype(), {}, -1, inBytes,
                          in.rawData()),
                 true, opts.timeout);
        PerRank<uint8_t*> outs;
        for (int q = 0; q < size(); ++q) outs.push_back(bytesOf(out) + q * inBytes);
        const bool inPlace = singleCopyAllgathersFor(out.nbytes());
        // Note [Small data in the descriptor line] in shm_op.hpp.
        if (!inPlace) op.carrySmallData(inBytes);
        gatherInto(op, bytesOf(in), inBytes, outs.span(), inPlace);
      },
      output, input);
}

WorkPtr ShmBackend::allgatherCoalesced(const std::vector<std::vector<Tensor>>& outputLists,
                                       const std::vector<Tensor>& inputs,
                                       const AllgatherOptions& opts) {
  std::vector<Tensor> flat;
  for (const auto& l : outputLists) flat.insert(flat.end(), l.begin(), l.end());
  return submit(
      [&] { return info(OpType::kAllgatherCoalesced, opts.seq, inputs, flat, opts.timeout); },
      flat, opts.asyncOp,
      [this, opts](const std::vector<std::vector<Tensor>>& outLists,
                   const std::vector<Tensor>& ins) {
        for (size_t i = 0; i < ins.size(); ++i) {
          allgatherInto(OpType::kAllgatherCoalesced, opts, ins[i], outLists[i]);
        }
        if (ins.empty()) {
          ShmOp op(group_,
                   makeDesc(opts.seq, OpType::kAllgatherCoalesced, DType::kUInt8, {}, -1, 0),
                   true, opts.timeout);
          op.sync();
        }
      },
      outputLists, inputs);
}

WorkPtr ShmBackend::gather(const std::vector<Tensor>& outputs, const Tensor& input,
                           const GatherOptions& opts) {
  checkCpu(input, "gather");
  return submit(
      [&] {
        return info(OpType::kGather, opts.seq, one(input), outputs, opts.timeout, opts.rootRank);
      },
      outputs, opts.asyncOp,
      [this, opts](const std::vector<Tensor>& outputList, const Tensor& in) {
        const OpDesc desc = makeDesc(opts.seq, OpType::kGather, in.dtype(), {}, opts.rootRank,
                                     in.nbytes(), in.rawData());
        PerRank<uint8_t*> outs;
        for (const auto& o : outputList) outs.push_back(bytesOf(o));
        const uint64_t total = in.nbytes() * u64(size());
        // Note [shm single copy]: a gather keeps the reductions' rule.
        const bool inPlace = singleCopyFor(total);
        if (!inPlace && eagerFits(group_, OpType::kGather, in.nbytes())) {
          EagerOp op(group_, desc, EagerShape::kLeavesWrite, opts.timeout);
          return gatherEager(op, bytesOf(in), in.nbytes(), outs.span());
        }
        ShmOp op(group_, desc, true, opts.timeout);
        gatherInto(op, bytesOf(in), in.nbytes(), outs.span(), inPlace, opts.rootRank);
      },
      outputs, input);
}

WorkPtr ShmBackend::scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                            const ScatterOptions& opts) {
  checkCpu(output, "scatter");
  return submit(
      [&] {
        return info(OpType::kScatter, opts.seq, inputs, one(output), opts.timeout, opts.rootRank);
      },
      output, opts.asyncOp,
      [this, opts](const Tensor& out, const std::vector<Tensor>& inputList) {
        const OpDesc desc = makeDesc(opts.seq, OpType::kScatter, out.dtype(), {}, opts.rootRank,
                                     out.nbytes());
        PerRank<const uint8_t*> ins;
        for (const auto& t : inputList) ins.push_back(bytesOf(t));
        if (eagerFits(group_, OpType::kScatter, out.nbytes())) {
          EagerOp op(group_, desc, EagerShape::kRootWrites, opts.timeout);
          return scatterEager(op, ins.span(), bytesOf(out), out.nbytes());
        }
        ShmOp op(group_, desc, true, opts.timeout);
        scatterChunked(op, ins.span(), bytesOf(out), out.nbytes(), opts.rootRank);
      },
      output, inputs);
}

WorkPtr ShmBackend::reduceScatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                  const ReduceScatterOptions& opts) {
  checkCpu(output, "reduce_scatter");
  return submit(
      [&] {
        return info(OpType::kReduceScatter, opts.seq, inputs, one(output), opts.timeout, -1, 0,
                    reduceOpName(opts.reduceOp));
      },
      output, opts.asyncOp,
      [this, opts](const Tensor& out, const std::vector<Tensor>& inputList) {
        ShmOp op(group_,
                 makeDesc(opts.seq, OpType::kReduceScatter, out.dtype(), opts.reduceOp, -1,
                          out.nbytes()),
                 true, opts.timeout);
        PerRank<const uint8_t*> ins;
        for (const auto& t : inputList) ins.push_back(bytesOf(t));
        reduceScatterParts(op, ins.span(), bytesOf(out), u64(out.numel()), out.dtype(),
                           opts.reduceOp);
      },
      output, inputs);
}

WorkPtr ShmBackend::reduceScatterTensor(const Tensor& output, const Tensor& input,
                                        const ReduceScatterOptions& opts) {
  checkCpu(output, "reduce_scatter_tensor");
  return submit(
      [&] {
        return info(OpType::kReduceScatterBase, opts.seq, one(input), one(output), opts.timeout,
                    -1, 0, reduceOpName(opts.reduceOp));
      },
      output, opts.asyncOp,
      [this, opts](const Tensor& out, const Tensor& in) {
        ShmOp op(group_,
                 makeDesc(opts.seq, OpType::kReduceScatterBase, out.dtype(), opts.reduceOp, -1,
                          out.nbytes(), in.rawData()),
                 true, opts.timeout);
        if (singleCopyFor(in.nbytes())) {
          reduceScatterSingleCopy(op, bytesOf(in), bytesOf(out), u64(out.numel()), out.dtype(),
                                  opts.reduceOp);
          return;
        }
        PerRank<const uint8_t*> ins;
        for (int q = 0; q < size(); ++q) ins.push_back(bytesOf(in) + q * out.nbytes());
        reduceScatterParts(op, ins.span(), bytesOf(out), u64(out.numel()), out.dtype(),
                           opts.reduceOp);
      },
      output, input);
}

WorkPtr ShmBackend::alltoall(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                             const AllToAllOptions& opts) {
  return submit(
      [&] { return info(OpType::kAlltoall, opts.seq, inputs, outputs, opts.timeout); }, outputs,
      opts.asyncOp,
      [this, opts](const std::vector<Tensor>& outputList, const std::vector<Tensor>& inputList) {
        OpDesc d = makeDesc(opts.seq, OpType::kAlltoall, inputList[0].dtype(), {}, -1, 0);
        d.hasCounts = 1;
        PerRank<const uint8_t*> sends;
        PerRank<uint8_t*> recvs;
        Counts counts;
        for (int q = 0; q < size(); ++q) {
          sends.push_back(bytesOf(inputList[q]));
          counts.push_back(inputList[q].nbytes());
        }
        for (int q = 0; q < size(); ++q) {
          recvs.push_back(bytesOf(outputList[q]));
          counts.push_back(outputList[q].nbytes());
        }
        alltoallCounted(d, opts.timeout, sends.span(), recvs.span(), counts.span());
      },
      outputs, inputs);
}

WorkPtr ShmBackend::alltoallBase(const Tensor& output, const Tensor& input,
                                 const std::vector<int64_t>& outputSplits,
                                 const std::vector<int64_t>& inputSplits,
                                 const AllToAllOptions& opts) {
  checkCpu(input, "all_to_all_single");
  return submit(
      [&] { return info(OpType::kAlltoallBase, opts.seq, one(input), one(output), opts.timeout); },
      output, opts.asyncOp,
      [this, opts](const Tensor& out, const Tensor& in, const std::vector<int64_t>& outSplits,
                   const std::vector<int64_t>& inSplits) {
        const uint64_t row = u64(detail::rowNumel(in)) * in.elementSize();
        OpDesc d = makeDesc(opts.seq, OpType::kAlltoallBase, in.dtype(), {}, -1, 0);
        d.hasCounts = 1;
        PerRank<const uint8_t*> sends;
        PerRank<uint8_t*> recvs;
        Counts counts;
        uint64_t off = 0;
        for (int q = 0; q < size(); ++q) {
          sends.push_back(bytesOf(in) + off);
          counts.push_back(u64(inSplits[q]) * row);
          off += counts[q];
        }
        off = 0;
        for (int q = 0; q < size(); ++q) {
          recvs.push_back(bytesOf(out) + off);
          counts.push_back(u64(outSplits[q]) * row);
          off += counts[size() + q];
        }
        alltoallCounted(d, opts.timeout, sends.span(), recvs.span(), counts.span());
      },
      output, input, outputSplits, inputSplits);
}

void ShmBackend::alltoallCounted(const OpDesc& desc, Milliseconds timeout,
                                 std::span<const uint8_t* const> sends,
                                 std::span<uint8_t* const> recvs,
                                 std::span<const uint64_t> counts) {
  const size_t n = static_cast<size_t>(size());
  ShmOp op(group_, desc, false, timeout, counts);
  alltoallParts(op, sends, counts.first(n), recvs, counts.subspan(n));
}

WorkPtr ShmBackend::barrier(const BarrierOptions& opts) {
  return submit([&] { return info(OpType::kBarrier, opts.seq, {}, {}, opts.timeout); },
                std::vector<Tensor>{}, opts.asyncOp, [this, opts] {
                  ShmOp op(group_, makeDesc(opts.seq, OpType::kBarrier, DType::kUInt8, {}, -1, 0),
                           true, opts.timeout);
                  op.sync();
                });
}

WorkPtr ShmBackend::send(const Tensor& tensor, int dstRank, const SendOptions& opts) {
  checkCpu(tensor, "send");
  auto work = std::make_shared<Work>(
      info(OpType::kSend, opts.seq, one(tensor), {}, opts.timeout, dstRank, opts.tag), tensor);
  p2p_->postSend(work, tensor, dstRank, opts.tag, opts.seq, opts.timeout);
  return work;
}

WorkPtr ShmBackend::recv(const Tensor& tensor, int srcRank, const RecvOptions& opts) {
  checkCpu(tensor, "recv");
  auto work = std::make_shared<Work>(
      info(OpType::kRecv, opts.seq, {}, one(tensor), opts.timeout, srcRank, opts.tag), tensor);
  p2p_->postRecv(work, tensor, srcRank, opts.tag, opts.timeout);
  return work;
}

WorkPtr ShmBackend::recvAnysource(const Tensor& tensor, const RecvOptions& opts) {
  checkCpu(tensor, "recv from any source");
  auto work = std::make_shared<Work>(
      info(OpType::kRecvAnysource, opts.seq, {}, one(tensor), opts.timeout, -1, opts.tag), tensor);
  p2p_->postRecv(work, tensor, -1, opts.tag, opts.timeout);
  return work;
}

}  // namespace distlab::comm::shm
