#include "emulator/faults/fault_backend.hpp"

#include <fmt/format.h>

#include "runtime/comm/backend_registry.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::emulator {

using comm::OpType;
using comm::WorkPtr;

namespace {

DType otherDtype(DType d) { return d == DType::kFloat64 ? DType::kFloat32 : DType::kFloat64; }

Tensor longer(const Tensor& t) { return zeros({t.numel() + 1}, TensorOptions{}.withDType(t.dtype())); }

comm::ReduceOp otherReduceOp(comm::ReduceOp op) {
  return op.kind == comm::ReduceOp::kMax ? comm::ReduceOp(comm::ReduceOp::kSum)
                                         : comm::ReduceOp(comm::ReduceOp::kMax);
}

}  // namespace

FaultBackend::FaultBackend(comm::BackendPtr inner, std::shared_ptr<FaultPlan> plan,
                           std::string groupName)
    : ForwardingBackend(std::move(inner)), plan_(std::move(plan)),
      groupName_(std::move(groupName)) {}

namespace {
class DoneLogger : public comm::WorkObserver {
 public:
  DoneLogger(std::shared_ptr<FaultPlan> plan, uint64_t seq) : plan_(std::move(plan)), seq_(seq) {}
  void onCompleted(const comm::Work& work) override {
    plan_->log().write(fmt::format("done {} {}", seq_, work.isSuccess() ? "ok" : "failed"));
  }

 private:
  std::shared_ptr<FaultPlan> plan_;
  uint64_t seq_;
};
}  // namespace

WorkPtr FaultBackend::track(uint64_t seq, WorkPtr work) {
  work->addObserver(std::make_shared<DoneLogger>(plan_, seq));
  return work;
}

void FaultBackend::logOp(OpType op, uint64_t seq, const std::vector<Tensor>& ins,
                         const std::string& redop, int root) {
  int64_t numel = 0;
  std::string dtype = "-";
  for (const auto& t : ins) {
    numel += t.numel();
    dtype = std::string(dtypeName(t.dtype()));
  }
  plan_->log().write(fmt::format("op {} {} {} {} {} {} {}", seq, comm::opTypeName(op), numel,
                                 dtype, redop.empty() ? "-" : redop, root, ins.size()));
}

const FaultSpec* FaultBackend::before(OpType op, uint64_t seq) {
  const FaultSpec* f = plan_->onCollective(seq);
  if (!f) return nullptr;
  if (f->kind == "hang" || f->kind == "crash" || f->kind == "straggler") {
    plan_->act(*f, seq);
    return nullptr;
  }
  plan_->recordFired(*f, seq, f->kind == "mismatch" ? f->mismatch
                                                    : std::string(comm::opTypeName(op)));
  return f;
}

WorkPtr FaultBackend::skipOrExtra(const FaultSpec& f, OpType op, uint64_t seq,
                                  const std::vector<Tensor>& ins, const std::vector<Tensor>& outs,
                                  comm::Milliseconds timeout) {
  if (f.kind == "skip_collective") {
    return comm::Work::completed(
        comm::makeWorkInfo(groupName_, rank(), op, seq, ins, outs, timeout), outs);
  }
  if (f.kind == "extra_collective") {
    Tensor one = zeros({1});
    logOp(OpType::kAllreduce, seq, {one}, "SUM", -1);
    comm::AllreduceOptions o;
    o.timeout = timeout;
    o.seq = seq;
    inner()->allreduce(one, o);
  }
  return nullptr;
}

void FaultBackend::unsupported(const FaultSpec& f, OpType op) const {
  throw ValueError(fmt::format("{}: fault mismatch = \"{}\" is not supported on {} (use "
                               "allreduce, allreduce_coalesced, broadcast or reduce)",
                               f.pos.str(), f.mismatch, comm::opTypeName(op)));
}

WorkPtr FaultBackend::allreduce(const Tensor& t, const comm::AllreduceOptions& o) {
  const FaultSpec* f = before(OpType::kAllreduce, o.seq);
  if (f && f->kind == "mismatch") {
    const std::string& m = f->mismatch;
    if (m == "shape" || m == "dtype") {
      Tensor other = m == "shape" ? longer(t) : t.to(otherDtype(t.dtype()));
      logOp(OpType::kAllreduce, o.seq, {other}, std::string(reduceOpName(o.reduceOp)), -1);
      return track(o.seq, inner()->allreduce(other, o));
    }
    if (m == "reduce_op") {
      auto o2 = o;
      o2.reduceOp = otherReduceOp(o.reduceOp);
      logOp(OpType::kAllreduce, o.seq, {t}, std::string(reduceOpName(o2.reduceOp)), -1);
      return track(o.seq, inner()->allreduce(t, o2));
    }
    if (m == "op") {
      comm::BroadcastOptions b;
      b.timeout = o.timeout;
      b.seq = o.seq;
      logOp(OpType::kBroadcast, o.seq, {t}, "", 0);
      return track(o.seq, inner()->broadcast(t, b));
    }
    if (m == "tensor_count") {
      comm::AllreduceCoalescedOptions c;
      c.reduceOp = o.reduceOp;
      c.timeout = o.timeout;
      c.seq = o.seq;
      logOp(OpType::kAllreduceCoalesced, o.seq, {t, t}, std::string(reduceOpName(o.reduceOp)), -1);
      return track(o.seq, inner()->allreduceCoalesced({t, t.clone()}, c));
    }
    unsupported(*f, OpType::kAllreduce);
  }
  if (f) {
    if (auto w = skipOrExtra(*f, OpType::kAllreduce, o.seq, {t}, {t}, o.timeout)) return w;
  }
  logOp(OpType::kAllreduce, o.seq, {t}, std::string(reduceOpName(o.reduceOp)), -1);
  return track(o.seq, inner()->allreduce(t, o));
}

WorkPtr FaultBackend::allreduceCoalesced(const std::vector<Tensor>& ts,
                                         const comm::AllreduceCoalescedOptions& o) {
  const FaultSpec* f = before(OpType::kAllreduceCoalesced, o.seq);
  auto redop = std::string(reduceOpName(o.reduceOp));
  if (f && f->kind == "mismatch") {
    std::vector<Tensor> other = ts;
    auto o2 = o;
    const std::string& m = f->mismatch;
    if (m == "shape") other.back() = longer(ts.back());
    else if (m == "dtype") other.back() = ts.back().to(otherDtype(ts.back().dtype()));
    else if (m == "tensor_count") other.push_back(ts.back().clone());
    else if (m == "reduce_op") o2.reduceOp = otherReduceOp(o.reduceOp);
    else unsupported(*f, OpType::kAllreduceCoalesced);
    logOp(OpType::kAllreduceCoalesced, o.seq, other, std::string(reduceOpName(o2.reduceOp)), -1);
    return track(o.seq, inner()->allreduceCoalesced(other, o2));
  }
  if (f) {
    if (auto w = skipOrExtra(*f, OpType::kAllreduceCoalesced, o.seq, ts, ts, o.timeout)) return w;
  }
  logOp(OpType::kAllreduceCoalesced, o.seq, ts, redop, -1);
  return track(o.seq, inner()->allreduceCoalesced(ts, o));
}

WorkPtr FaultBackend::broadcast(const Tensor& t, const comm::BroadcastOptions& o) {
  const FaultSpec* f = before(OpType::kBroadcast, o.seq);
  if (f && f->kind == "mismatch") {
    const std::string& m = f->mismatch;
    auto o2 = o;
    Tensor other = t;
    if (m == "shape") other = longer(t);
    else if (m == "dtype") other = t.to(otherDtype(t.dtype()));
    else if (m == "root") o2.rootRank = (o.rootRank + 1) % size();
    else if (m == "op") {
      comm::AllreduceOptions a;
      a.timeout = o.timeout;
      a.seq = o.seq;
      logOp(OpType::kAllreduce, o.seq, {t}, "SUM", -1);
      return track(o.seq, inner()->allreduce(t, a));
    } else {
      unsupported(*f, OpType::kBroadcast);
    }
    logOp(OpType::kBroadcast, o.seq, {other}, "", o2.rootRank);
    return track(o.seq, inner()->broadcast(other, o2));
  }
  if (f) {
    if (auto w = skipOrExtra(*f, OpType::kBroadcast, o.seq, {t}, {t}, o.timeout)) return w;
  }
  logOp(OpType::kBroadcast, o.seq, {t}, "", o.rootRank);
  return track(o.seq, inner()->broadcast(t, o));
}

WorkPtr FaultBackend::reduce(const Tensor& t, const comm::ReduceOptions& o) {
  const FaultSpec* f = before(OpType::kReduce, o.seq);
  if (f && f->kind == "mismatch") {
    const std::string& m = f->mismatch;
    auto o2 = o;
    Tensor other = t;
    if (m == "shape") other = longer(t);
    else if (m == "dtype") other = t.to(otherDtype(t.dtype()));
    else if (m == "root") o2.rootRank = (o.rootRank + 1) % size();
    else if (m == "reduce_op") o2.reduceOp = otherReduceOp(o.reduceOp);
    else unsupported(*f, OpType::kReduce);
    logOp(OpType::kReduce, o.seq, {other}, std::string(reduceOpName(o2.reduceOp)), o2.rootRank);
    return track(o.seq, inner()->reduce(other, o2));
  }
  if (f) {
    if (auto w = skipOrExtra(*f, OpType::kReduce, o.seq, {t}, {t}, o.timeout)) return w;
  }
  logOp(OpType::kReduce, o.seq, {t}, std::string(reduceOpName(o.reduceOp)), o.rootRank);
  return track(o.seq, inner()->reduce(t, o));
}

// The remaining collectives support every fault but mismatch.
#define DISTLAB_FAULT_SIMPLE(OP, INS, OUTS, REDOP, ROOT, CALL)                      \
  const FaultSpec* f = before(OP, o.seq);                                           \
  if (f && f->kind == "mismatch") unsupported(*f, OP);                              \
  if (f) {                                                                          \
    if (auto w = skipOrExtra(*f, OP, o.seq, INS, OUTS, o.timeout)) return w;        \
  }                                                                                 \
  logOp(OP, o.seq, INS, REDOP, ROOT);                                               \
  return track(o.seq, CALL);

WorkPtr FaultBackend::allgather(const std::vector<Tensor>& outs, const Tensor& in,
                                const comm::AllgatherOptions& o) {
  DISTLAB_FAULT_SIMPLE(OpType::kAllgather, {in}, outs, "", -1, inner()->allgather(outs, in, o))
}
WorkPtr FaultBackend::allgatherIntoTensor(const Tensor& out, const Tensor& in,
                                          const comm::AllgatherOptions& o) {
  DISTLAB_FAULT_SIMPLE(OpType::kAllgatherBase, {in}, {out}, "", -1,
                       inner()->allgatherIntoTensor(out, in, o))
}
WorkPtr FaultBackend::gather(const std::vector<Tensor>& outs, const Tensor& in,
                             const comm::GatherOptions& o) {
  DISTLAB_FAULT_SIMPLE(OpType::kGather, {in}, outs, "", o.rootRank, inner()->gather(outs, in, o))
}
WorkPtr FaultBackend::scatter(const Tensor& out, const std::vector<Tensor>& ins,
                              const comm::ScatterOptions& o) {
  DISTLAB_FAULT_SIMPLE(OpType::kScatter, {out}, {out}, "", o.rootRank,
                       inner()->scatter(out, ins, o))
}
WorkPtr FaultBackend::reduceScatter(const Tensor& out, const std::vector<Tensor>& ins,
                                    const comm::ReduceScatterOptions& o) {
  DISTLAB_FAULT_SIMPLE(OpType::kReduceScatter, ins, {out},
                       std::string(reduceOpName(o.reduceOp)), -1,
                       inner()->reduceScatter(out, ins, o))
}
WorkPtr FaultBackend::reduceScatterTensor(const Tensor& out, const Tensor& in,
                                          const comm::ReduceScatterOptions& o) {
  DISTLAB_FAULT_SIMPLE(OpType::kReduceScatterBase, {in}, {out},
                       std::string(reduceOpName(o.reduceOp)), -1,
                       inner()->reduceScatterTensor(out, in, o))
}
WorkPtr FaultBackend::alltoall(const std::vector<Tensor>& outs, const std::vector<Tensor>& ins,
                               const comm::AllToAllOptions& o) {
  DISTLAB_FAULT_SIMPLE(OpType::kAlltoall, ins, outs, "", -1, inner()->alltoall(outs, ins, o))
}
WorkPtr FaultBackend::alltoallBase(const Tensor& out, const Tensor& in,
                                   const std::vector<int64_t>& outSplits,
                                   const std::vector<int64_t>& inSplits,
                                   const comm::AllToAllOptions& o) {
  DISTLAB_FAULT_SIMPLE(OpType::kAlltoallBase, {in}, {out}, "", -1,
                       inner()->alltoallBase(out, in, outSplits, inSplits, o))
}
WorkPtr FaultBackend::barrier(const comm::BarrierOptions& o) {
  DISTLAB_FAULT_SIMPLE(OpType::kBarrier, {}, {}, "", -1, inner()->barrier(o))
}
#undef DISTLAB_FAULT_SIMPLE

void installFaultInjection(std::shared_ptr<FaultPlan> plan) {
  comm::addBackendDecorator(
      "faults", comm::kLayerFault,
      [plan](comm::BackendPtr inner, const comm::BackendContext& ctx) -> comm::BackendPtr {
        if (ctx.groupDesc != "default_pg") return inner;
        return std::make_shared<FaultBackend>(std::move(inner), plan, ctx.groupName);
      });
}

}  // namespace distlab::emulator
