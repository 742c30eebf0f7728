#include "tests/comm/collective_cases.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include "tests/comm/comm_test_util.hpp"

namespace distlab::testing {

using comm::ProcessGroup;
using comm::ReduceOp;

std::string caseKindName(CaseKind kind) {
  static const char* names[] = {"allreduce",      "allreduce_coalesced", "broadcast",
                                "reduce",         "allgather",           "all_gather_into_tensor",
                                "allgather_coalesced", "gather",         "scatter",
                                "reduce_scatter", "reduce_scatter_tensor", "alltoall",
                                "all_to_all_single", "barrier",          "p2p_ring"};
  return names[static_cast<int>(kind)];
}

std::string caseOpName(CaseKind kind) {
  return kind == CaseKind::kP2PRing ? "send" : caseKindName(kind);
}

std::ostream& operator<<(std::ostream& out, const OpCase& c) {
  return out << fmt::format("{}(dtype {}, op {}, root {}, shape {}, sizes [{}], stacked {}, seed {})",
                            caseKindName(c.kind), dtypeName(c.dtype),
                            comm::reduceOpName(static_cast<ReduceOp::Kind>(c.reduceOp)), c.root,
                            shapeToString(c.shape), fmt::join(c.sizes, ", "), c.stacked, c.seed);
}

namespace {

struct Ctx {
  ProcessGroup& g;
  const OpCase& c;
  int n;
  int me;
  std::string what;
};

ReduceOp opFor(const OpCase& c, int rank) {
  auto kind = static_cast<ReduceOp::Kind>(c.reduceOp);
  return kind == ReduceOp::kPremulSum ? ReduceOp::premulSum(premulScalar(rank)) : ReduceOp(kind);
}

std::vector<double> scalars(int n) {
  std::vector<double> s;
  for (int r = 0; r < n; ++r) s.push_back(premulScalar(r));
  return s;
}

Tensor reduceInput(const Ctx& x, int rank, const Shape& shape, uint64_t salt = 0) {
  return makeInput(x.c.dtype, shape, x.c.seed + salt, rank,
                   valueRange(ReduceOp(static_cast<ReduceOp::Kind>(x.c.reduceOp)), x.c.dtype, rank,
                              x.n));
}

Tensor plainInput(const Ctx& x, int rank, const Shape& shape, uint64_t salt = 0) {
  return makeInput(x.c.dtype, shape, x.c.seed + salt, rank,
                   valueRange(std::nullopt, x.c.dtype, rank, x.n));
}

Shape withLead(int64_t lead, const Shape& row) {
  Shape s{lead};
  s.insert(s.end(), row.begin(), row.end());
  return s;
}

// Concatenates the row-major values of `parts` into one tensor of `shape`.
Tensor concatValues(const std::vector<Tensor>& parts, const Shape& shape, DType dtype) {
  std::vector<double> all;
  for (const auto& p : parts) {
    auto v = p.toVector<double>();
    all.insert(all.end(), v.begin(), v.end());
  }
  return tensorFrom(all, shape, dtype);
}

// Elements [begin, begin + count) of t's row-major values as a 1-D tensor.
Tensor sliceValues(const Tensor& t, int64_t begin, int64_t count) {
  auto v = t.toVector<double>();
  std::vector<double> part(v.begin() + begin, v.begin() + begin + count);
  return fromVector<double>(part, {count}, TensorOptions{t.dtype()});
}

void allreduceCase(const Ctx& x) {
  Tensor t = reduceInput(x, x.me, x.c.shape);
  x.g.allreduce(t, {.reduceOp = opFor(x.c, x.me)})->wait();
  std::vector<Tensor> all;
  for (int r = 0; r < x.n; ++r) all.push_back(reduceInput(x, r, x.c.shape));
  expectEqualTensor(t, referenceReduce(all, ReduceOp(static_cast<ReduceOp::Kind>(x.c.reduceOp)),
                                       scalars(x.n)),
                    x.what);
}

void allreduceCoalescedCase(const Ctx& x) {
  const Shape second{static_cast<int64_t>(x.c.sizes.empty() ? 3 : x.c.sizes[0])};
  std::vector<Tensor> ts = {reduceInput(x, x.me, x.c.shape), reduceInput(x, x.me, second, 7)};
  x.g.allreduceCoalesced(ts, {.reduceOp = opFor(x.c, x.me)})->wait();
  for (int i = 0; i < 2; ++i) {
    std::vector<Tensor> all;
    for (int r = 0; r < x.n; ++r) {
      all.push_back(i == 0 ? reduceInput(x, r, x.c.shape) : reduceInput(x, r, second, 7));
    }
    expectEqualTensor(ts[i],
                      referenceReduce(all, ReduceOp(static_cast<ReduceOp::Kind>(x.c.reduceOp)),
                                      scalars(x.n)),
                      x.what + fmt::format(" tensor {}", i));
  }
}

void broadcastCase(const Ctx& x) {
  Tensor t = plainInput(x, x.me, x.c.shape);
  x.g.broadcast(t, {.rootRank = x.c.root})->wait();
  expectEqualTensor(t, plainInput(x, x.c.root, x.c.shape), x.what);
}

void reduceCase(const Ctx& x) {
  Tensor t = reduceInput(x, x.me, x.c.shape);
  x.g.reduce(t, {.reduceOp = opFor(x.c, x.me), .rootRank = x.c.root})->wait();
  if (x.me != x.c.root) return expectEqualTensor(t, reduceInput(x, x.me, x.c.shape), x.what);
  std::vector<Tensor> all;
  for (int r = 0; r < x.n; ++r) all.push_back(reduceInput(x, r, x.c.shape));
  expectEqualTensor(t, referenceReduce(all, ReduceOp(static_cast<ReduceOp::Kind>(x.c.reduceOp)),
                                       scalars(x.n)),
                    x.what);
}

void allgatherCase(const Ctx& x) {
  auto sizeOf = [&](int r) { return x.c.sizes[r % x.c.sizes.size()]; };
  std::vector<Tensor> outs;
  for (int q = 0; q < x.n; ++q) outs.push_back(empty({sizeOf(q)}, TensorOptions{x.c.dtype}));
  x.g.allgather(outs, plainInput(x, x.me, {sizeOf(x.me)}))->wait();
  for (int q = 0; q < x.n; ++q) {
    expectEqualTensor(outs[q], plainInput(x, q, {sizeOf(q)}), x.what + fmt::format(" from {}", q));
  }
}

Shape gatheredShape(const Ctx& x) {
  if (x.c.stacked || x.c.shape.empty()) return withLead(x.n, x.c.shape);
  Shape s = x.c.shape;
  s[0] *= x.n;
  return s;
}

void allgatherIntoTensorCase(const Ctx& x) {
  Tensor out = empty(gatheredShape(x), TensorOptions{x.c.dtype});
  x.g.allgatherIntoTensor(out, plainInput(x, x.me, x.c.shape))->wait();
  std::vector<Tensor> parts;
  for (int q = 0; q < x.n; ++q) parts.push_back(plainInput(x, q, x.c.shape));
  expectEqualTensor(out, concatValues(parts, out.sizes(), x.c.dtype), x.what);
}

void allgatherCoalescedCase(const Ctx& x) {
  const Shape second{3};
  std::vector<Tensor> ins = {plainInput(x, x.me, x.c.shape), plainInput(x, x.me, second, 5)};
  std::vector<std::vector<Tensor>> outs(2);
  for (int q = 0; q < x.n; ++q) {
    outs[0].push_back(empty(x.c.shape, TensorOptions{x.c.dtype}));
    outs[1].push_back(empty(second, TensorOptions{x.c.dtype}));
  }
  x.g.allgatherCoalesced(outs, ins)->wait();
  for (int q = 0; q < x.n; ++q) {
    expectEqualTensor(outs[0][q], plainInput(x, q, x.c.shape), x.what);
    expectEqualTensor(outs[1][q], plainInput(x, q, second, 5), x.what);
  }
}

void gatherCase(const Ctx& x) {
  std::vector<Tensor> outs;
  if (x.me == x.c.root) {
    for (int q = 0; q < x.n; ++q) outs.push_back(empty(x.c.shape, TensorOptions{x.c.dtype}));
  }
  x.g.gather(outs, plainInput(x, x.me, x.c.shape), {.rootRank = x.c.root})->wait();
  for (int q = 0; q < static_cast<int>(outs.size()); ++q) {
    expectEqualTensor(outs[q], plainInput(x, q, x.c.shape), x.what + fmt::format(" from {}", q));
  }
}

void scatterCase(const Ctx& x) {
  std::vector<Tensor> ins;
  if (x.me == x.c.root) {
    for (int q = 0; q < x.n; ++q) ins.push_back(plainInput(x, q, x.c.shape, 11));
  }
  Tensor out = empty(x.c.shape, TensorOptions{x.c.dtype});
  x.g.scatter(out, ins, {.rootRank = x.c.root})->wait();
  expectEqualTensor(out, plainInput(x, x.me, x.c.shape, 11), x.what);
}

void reduceScatterCase(const Ctx& x) {
  std::vector<Tensor> ins;
  for (int q = 0; q < x.n; ++q) ins.push_back(reduceInput(x, x.me, x.c.shape, q));
  Tensor out = empty(x.c.shape, TensorOptions{x.c.dtype});
  x.g.reduceScatter(out, ins, {.reduceOp = opFor(x.c, x.me)})->wait();
  std::vector<Tensor> all;
  for (int r = 0; r < x.n; ++r) all.push_back(reduceInput(x, r, x.c.shape, x.me));
  expectEqualTensor(out, referenceReduce(all, ReduceOp(static_cast<ReduceOp::Kind>(x.c.reduceOp)),
                                         scalars(x.n)),
                    x.what);
}

void reduceScatterTensorCase(const Ctx& x) {
  const Shape inShape = gatheredShape(x);
  Tensor in = reduceInput(x, x.me, inShape);
  Tensor out = empty(x.c.shape, TensorOptions{x.c.dtype});
  x.g.reduceScatterTensor(out, in, {.reduceOp = opFor(x.c, x.me)})->wait();
  const int64_t m = shapeNumel(x.c.shape);
  std::vector<Tensor> all;
  for (int r = 0; r < x.n; ++r) all.push_back(sliceValues(reduceInput(x, r, inShape), x.me * m, m));
  Tensor expected = referenceReduce(all, ReduceOp(static_cast<ReduceOp::Kind>(x.c.reduceOp)),
                                    scalars(x.n));
  expectEqualTensor(out, concatValues({expected}, x.c.shape, x.c.dtype), x.what);
}

int64_t split(const Ctx& x, int p, int q) { return x.c.sizes[(p * x.n + q) % x.c.sizes.size()]; }

void alltoallCase(const Ctx& x) {
  std::vector<Tensor> ins, outs;
  for (int q = 0; q < x.n; ++q) {
    ins.push_back(plainInput(x, x.me, {split(x, x.me, q)}, q));
    outs.push_back(empty({split(x, q, x.me)}, TensorOptions{x.c.dtype}));
  }
  x.g.alltoall(outs, ins)->wait();
  for (int p = 0; p < x.n; ++p) {
    expectEqualTensor(outs[p], plainInput(x, p, {split(x, p, x.me)}, x.me),
                      x.what + fmt::format(" from {}", p));
  }
}

void alltoallSingleCase(const Ctx& x) {
  const Shape& row = x.c.shape;
  const int64_t rowNumel = shapeNumel(row);
  auto inputOf = [&](int p) {
    int64_t rows = 0;
    for (int q = 0; q < x.n; ++q) rows += split(x, p, q);
    return plainInput(x, p, withLead(rows, row));
  };
  std::vector<int64_t> inSplits, outSplits;
  int64_t outRows = 0;
  for (int q = 0; q < x.n; ++q) {
    inSplits.push_back(split(x, x.me, q));
    outSplits.push_back(split(x, q, x.me));
    outRows += outSplits.back();
  }
  Tensor out = empty(withLead(outRows, row), TensorOptions{x.c.dtype});
  x.g.alltoallSingle(out, inputOf(x.me), outSplits, inSplits)->wait();
  std::vector<Tensor> parts;
  for (int p = 0; p < x.n; ++p) {
    int64_t offset = 0;
    for (int q = 0; q < x.me; ++q) offset += split(x, p, q);
    parts.push_back(sliceValues(inputOf(p), offset * rowNumel, split(x, p, x.me) * rowNumel));
  }
  expectEqualTensor(out, concatValues(parts, out.sizes(), x.c.dtype), x.what);
}

void p2pRingCase(const Ctx& x) {
  const int next = (x.me + 1) % x.n, prev = (x.me + x.n - 1) % x.n;
  const int tag = static_cast<int>(x.c.seed % 5);
  Tensor sendT = plainInput(x, x.me, x.c.shape);
  Tensor recvT = empty(x.c.shape, TensorOptions{x.c.dtype});
  auto works = x.g.batchIsendIrecv({{comm::P2POp::kIsend, sendT, next, tag},
                                    {comm::P2POp::kIrecv, recvT, prev, tag}});
  for (auto& w : works) w->wait();
  if (works[1]->sourceRank() != prev) {
    throw std::runtime_error(fmt::format("{}: recv source {} != {}", x.what,
                                         works[1]->sourceRank(), prev));
  }
  expectEqualTensor(recvT, plainInput(x, prev, x.c.shape), x.what);
}

}  // namespace

namespace {

void dispatch(const Ctx& x) {
  switch (x.c.kind) {
    case CaseKind::kAllreduce: return allreduceCase(x);
    case CaseKind::kAllreduceCoalesced: return allreduceCoalescedCase(x);
    case CaseKind::kBroadcast: return broadcastCase(x);
    case CaseKind::kReduce: return reduceCase(x);
    case CaseKind::kAllgather: return allgatherCase(x);
    case CaseKind::kAllgatherIntoTensor: return allgatherIntoTensorCase(x);
    case CaseKind::kAllgatherCoalesced: return allgatherCoalescedCase(x);
    case CaseKind::kGather: return gatherCase(x);
    case CaseKind::kScatter: return scatterCase(x);
    case CaseKind::kReduceScatter: return reduceScatterCase(x);
    case CaseKind::kReduceScatterTensor: return reduceScatterTensorCase(x);
    case CaseKind::kAlltoall: return alltoallCase(x);
    case CaseKind::kAlltoallSingle: return alltoallSingleCase(x);
    case CaseKind::kBarrier: x.g.barrier()->wait(); return;
    case CaseKind::kP2PRing: return p2pRingCase(x);
    case CaseKind::kCount: break;
  }
}

// Runs fn; when `op` is unsupported, requires the "does not support" error instead.
void runChecked(const std::string& what, const std::string& op,
                const std::set<std::string>& unsupported, const std::function<void()>& fn) {
  if (!unsupported.count(op)) return fn();
  try {
    fn();
  } catch (const std::exception& e) {
    if (std::string(e.what()).find("does not support") != std::string::npos) return;
    throw std::runtime_error(what + ": expected a 'does not support' error, got: " + e.what());
  }
  throw std::runtime_error(what + ": expected a 'does not support' error, but it succeeded");
}

}  // namespace

void runCase(ProcessGroup& group, const OpCase& c, const std::set<std::string>& unsupported) {
  std::ostringstream desc;
  desc << "rank " << group.rank() << " " << c;
  Ctx x{group, c, group.size(), group.rank(), desc.str()};
  runChecked(x.what, caseOpName(c.kind), unsupported, [&] { dispatch(x); });
}

void runIdentities(ProcessGroup& group, const OpCase& c, const std::set<std::string>& unsupported) {
  std::ostringstream desc;
  desc << "rank " << group.rank() << " identities " << c;
  OpCase sumCase = c;
  sumCase.reduceOp = ReduceOp::kSum;
  Ctx x{group, sumCase, group.size(), group.rank(), desc.str()};
  const int64_t m = std::max<int64_t>(shapeNumel(c.shape), 0);
  // reduce_scatter_tensor then all_gather_into_tensor == allreduce.
  if (!unsupported.count("reduce_scatter_tensor") && !unsupported.count("all_gather_into_tensor")) {
    Tensor in = reduceInput(x, x.me, {x.n * m});
    Tensor viaAllreduce = in.clone();
    group.allreduce(viaAllreduce)->wait();
    Tensor part = empty({m}, TensorOptions{c.dtype});
    group.reduceScatterTensor(part, in)->wait();
    Tensor gathered = empty({x.n * m}, TensorOptions{c.dtype});
    group.allgatherIntoTensor(gathered, part)->wait();
    expectEqualTensor(gathered, viaAllreduce, x.what + " reduce_scatter+all_gather vs allreduce");
  }
  // all_to_all_single with splits S, then with the transposed splits, is the identity.
  if (!unsupported.count("all_to_all_single")) {
    std::vector<int64_t> inSplits, outSplits;
    int64_t inRows = 0, outRows = 0;
    for (int q = 0; q < x.n; ++q) {
      inSplits.push_back(split(x, x.me, q));
      outSplits.push_back(split(x, q, x.me));
      inRows += inSplits.back();
      outRows += outSplits.back();
    }
    Tensor in = plainInput(x, x.me, {inRows, 2});
    Tensor mid = empty({outRows, 2}, TensorOptions{c.dtype});
    group.alltoallSingle(mid, in, outSplits, inSplits)->wait();
    Tensor back = empty({inRows, 2}, TensorOptions{c.dtype});
    group.alltoallSingle(back, mid, inSplits, outSplits)->wait();
    expectEqualTensor(back, in, x.what + " all_to_all twice");
  }
}

}  // namespace distlab::testing
