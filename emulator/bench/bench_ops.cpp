#include "emulator/bench/bench_ops.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>

#include "runtime/comm/op_names.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::emulator {

namespace {

using comm::OpType;
using comm::ProcessGroup;

// Note [Bench operations]: the collectives by their OpType (named by the op
// table), then distlab's send_recv.
constexpr std::array kBenchOpTypes = {
    OpType::kAllreduce, OpType::kAllgatherBase, OpType::kReduceScatterBase, OpType::kBroadcast,
    OpType::kAlltoallBase, OpType::kReduce, OpType::kAllgather, OpType::kReduceScatter,
    OpType::kAlltoall, OpType::kGather, OpType::kScatter, OpType::kBarrier};
constexpr const char* kSendRecv = "send_recv";

OpType typeOf(const std::string& op) {
  return comm::parseApiName(op).value_or(OpType::kUnknown);
}

// Ops whose row size is one rank's buffer, not a multiple of the world size.
bool unsplit(const std::string& op) {
  const OpType t = typeOf(op);
  return op == kSendRecv || t == OpType::kAllreduce || t == OpType::kBroadcast ||
         t == OpType::kReduce;
}

float sumOverRanks(int n, uint64_t i) {
  float s = 0;
  for (int r = 0; r < n; ++r) s += benchInputValue(r, i);
  return s;
}

// n views of `flat`, one per rank, of `m` elements each (the list forms'
// tensors: one allocation, so the list costs what the flat form costs).
std::vector<Tensor> perRank(const Tensor& flat, int n, uint64_t m) {
  std::vector<Tensor> out;
  for (int r = 0; r < n; ++r) {
    out.push_back(flat.narrow(0, static_cast<int64_t>(r * m), static_cast<int64_t>(m)));
  }
  return out;
}

struct Shape {
  ProcessGroup& g;
  uint64_t count;  // the row's elements (benchElementCount)
  uint64_t m;      // count / n: one rank's part of the split ops
  int n, me;
  bool async;
  Device dev;
  Tensor input(int rank, uint64_t c) const { return benchInput(rank, c, dev); }
  Tensor output(uint64_t c) const {
    return empty({static_cast<int64_t>(c)}, TensorOptions{DType::kFloat32, dev});
  }
};

// all_reduce, broadcast and reduce: in place on one buffer.
OpBuffers inPlace(const Shape& s, OpType type) {
  OpBuffers b;
  b.in = b.out = s.input(s.me, s.count);
  ProcessGroup& g = s.g;
  const bool async = s.async;
  const int n = s.n;
  const Tensor t = b.in;
  if (type == OpType::kAllreduce) {
    b.run = [&g, async, t] { g.allreduce(t, {.asyncOp = async})->wait(); };
    b.expected = [n](uint64_t i) { return sumOverRanks(n, i); };
  } else if (type == OpType::kBroadcast) {
    b.run = [&g, async, t] { g.broadcast(t, {.rootRank = 0, .asyncOp = async})->wait(); };
    b.expected = [](uint64_t i) { return benchInputValue(0, i); };
  } else {
    b.run = [&g, async, t] { g.reduce(t, {.rootRank = 0, .asyncOp = async})->wait(); };
    b.expected = [n](uint64_t i) { return sumOverRanks(n, i); };
    b.checked = s.me == 0;  // the others' buffers are scratch after a reduce
  }
  return b;
}

// all_gather_into_tensor, all_gather and gather: rank q's m elements at q * m.
OpBuffers gathering(const Shape& s, OpType type) {
  OpBuffers b;
  b.in = s.input(s.me, s.m);
  b.out = s.output(s.count);
  ProcessGroup& g = s.g;
  const bool async = s.async;
  const Tensor in = b.in, out = b.out;
  const std::vector<Tensor> outs = perRank(out, s.n, s.m);
  if (type == OpType::kAllgatherBase) {
    b.run = [&g, async, in, out] { g.allgatherIntoTensor(out, in, {.asyncOp = async})->wait(); };
  } else if (type == OpType::kAllgather) {
    b.run = [&g, async, in, outs] { g.allgather(outs, in, {.asyncOp = async})->wait(); };
  } else {
    const std::vector<Tensor> rootOuts = s.me == 0 ? outs : std::vector<Tensor>{};
    b.run = [&g, async, in, rootOuts] {
      g.gather(rootOuts, in, {.rootRank = 0, .asyncOp = async})->wait();
    };
    b.checked = s.me == 0;
  }
  const uint64_t m = s.m;
  b.expected = [m](uint64_t i) { return benchInputValue(static_cast<int>(i / m), i % m); };
  return b;
}

// reduce_scatter_tensor, reduce_scatter and scatter: this rank's m elements
// of the count-element input(s).
OpBuffers scattering(const Shape& s, OpType type) {
  OpBuffers b;
  b.in = s.input(type == OpType::kScatter ? 0 : s.me, s.count);
  b.out = s.output(s.m);
  ProcessGroup& g = s.g;
  const bool async = s.async;
  const Tensor in = b.in, out = b.out;
  const std::vector<Tensor> ins = perRank(in, s.n, s.m);
  const uint64_t offset = static_cast<uint64_t>(s.me) * s.m;
  const int n = s.n;
  if (type == OpType::kScatter) {
    const std::vector<Tensor> rootIns = s.me == 0 ? ins : std::vector<Tensor>{};
    b.run = [&g, async, out, rootIns] {
      g.scatter(out, rootIns, {.rootRank = 0, .asyncOp = async})->wait();
    };
    b.expected = [offset](uint64_t i) { return benchInputValue(0, offset + i); };
    return b;
  }
  if (type == OpType::kReduceScatterBase) {
    b.run = [&g, async, in, out] { g.reduceScatterTensor(out, in, {.asyncOp = async})->wait(); };
  } else {
    b.run = [&g, async, ins, out] { g.reduceScatter(out, ins, {.asyncOp = async})->wait(); };
  }
  b.expected = [n, offset](uint64_t i) { return sumOverRanks(n, offset + i); };
  return b;
}

// all_to_all_single and all_to_all: block q of this rank's input goes to rank q.
OpBuffers allToAll(const Shape& s, OpType type) {
  OpBuffers b;
  b.in = s.input(s.me, s.count);
  b.out = s.output(s.count);
  ProcessGroup& g = s.g;
  const bool async = s.async;
  const Tensor in = b.in, out = b.out;
  if (type == OpType::kAlltoallBase) {
    b.run = [&g, async, in, out] {
      g.alltoallSingle(out, in, {}, {}, {.asyncOp = async})->wait();
    };
  } else {
    const std::vector<Tensor> ins = perRank(in, s.n, s.m), outs = perRank(out, s.n, s.m);
    b.run = [&g, async, ins, outs] { g.alltoall(outs, ins, {.asyncOp = async})->wait(); };
  }
  const uint64_t m = s.m, offset = static_cast<uint64_t>(s.me) * s.m;
  b.expected = [m, offset](uint64_t i) {
    return benchInputValue(static_cast<int>(i / m), offset + i % m);
  };
  return b;
}

// send_recv: to rank + 1, from rank - 1, both in flight at once.
OpBuffers sendRecv(const Shape& s) {
  if (s.n < 2) throw DistBackendError("send_recv needs at least 2 ranks (it does not support 1)");
  OpBuffers b;
  b.in = s.input(s.me, s.count);
  b.out = s.output(s.count);
  ProcessGroup& g = s.g;
  const Tensor in = b.in, out = b.out;
  const int next = (s.me + 1) % s.n, previous = (s.me + s.n - 1) % s.n;
  b.run = [&g, in, out, next, previous] {
    comm::WorkPtr sent = g.isend(in, next);
    g.irecv(out, previous)->wait();
    sent->wait();
  };
  b.expected = [previous](uint64_t i) { return benchInputValue(previous, i); };
  return b;
}

OpBuffers barrier(const Shape& s) {
  OpBuffers b;
  b.in = b.out = s.output(0);
  ProcessGroup& g = s.g;
  const bool async = s.async;
  b.run = [&g, async] { g.barrier({.asyncOp = async})->wait(); };
  b.expected = [](uint64_t) { return 0.0f; };
  return b;
}

}  // namespace

std::vector<std::string> benchOpNames() {
  std::vector<std::string> ops;
  for (OpType type : kBenchOpTypes) ops.emplace_back(comm::apiName(type));
  ops.emplace_back(kSendRecv);
  return ops;
}

float benchInputValue(int rank, uint64_t i) {
  return static_cast<float>(static_cast<int64_t>((rank * 7 + i * 3) % 13) - 6);
}

Tensor benchInput(int rank, uint64_t count, const Device& device) {
  Tensor t = empty({static_cast<int64_t>(count)}, TensorOptions{DType::kFloat32});
  float* p = t.data<float>();
  for (uint64_t i = 0; i < count; ++i) p[i] = benchInputValue(rank, i);
  return device.isCpu() ? t : t.to(device);
}

OpBuffers makeBenchOp(ProcessGroup& g, const std::string& op, uint64_t count, bool async,
                      const Device& device) {
  const int n = g.size();
  const Shape s{g, count, count / n, n, g.rank(), async, device};
  if (op == kSendRecv) return sendRecv(s);
  switch (const OpType type = typeOf(op)) {
    case OpType::kAllreduce:
    case OpType::kBroadcast:
    case OpType::kReduce: return inPlace(s, type);
    case OpType::kAllgatherBase:
    case OpType::kAllgather:
    case OpType::kGather: return gathering(s, type);
    case OpType::kReduceScatterBase:
    case OpType::kReduceScatter:
    case OpType::kScatter: return scattering(s, type);
    case OpType::kAlltoallBase:
    case OpType::kAlltoall: return allToAll(s, type);
    case OpType::kBarrier: return barrier(s);
    default:
      throw ValueError(fmt::format("bench collectives: unknown op '{}' (valid: {})", op,
                                   fmt::join(benchOpNames(), ", ")));
  }
}

uint64_t benchElementCount(const std::string& op, uint64_t bytes, int n) {
  if (typeOf(op) == OpType::kBarrier) return 0;
  const uint64_t count = std::max<uint64_t>(1, bytes / 4);
  if (unsplit(op)) return count;
  return std::max<uint64_t>(n, count - count % n);
}

bool benchOpReduces(const std::string& op) {
  const OpType t = typeOf(op);
  return t == OpType::kAllreduce || t == OpType::kReduceScatterBase ||
         t == OpType::kReduceScatter || t == OpType::kReduce;
}

int benchOpRoot(const std::string& op) {
  const OpType t = typeOf(op);
  const bool rooted = t == OpType::kBroadcast || t == OpType::kReduce || t == OpType::kGather ||
                      t == OpType::kScatter;
  return rooted ? 0 : -1;
}

// nccl-tests' factors: all_reduce 2(n-1)/n; broadcast, reduce and sendrecv 1
// (every byte crosses one link once); the gathers, scatters and all-to-alls
// (n-1)/n; barrier moves nothing.
double busBandwidthFactor(const std::string& op, int n) {
  const OpType t = typeOf(op);
  if (t == OpType::kAllreduce) return 2.0 * (n - 1) / n;
  if (t == OpType::kBarrier) return 0.0;
  if (unsplit(op)) return 1.0;
  return static_cast<double>(n - 1) / n;
}

}  // namespace distlab::emulator
