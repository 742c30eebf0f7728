#include "emulator/faults/fault_backend.hpp"

#include <fmt/format.h>

#include <iterator>
#include <string_view>

#include "emulator/faults/stream_stall.hpp"
#include "runtime/comm/backend_registry.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::emulator {

using comm::OpType;
using comm::Operation;
using comm::WorkPtr;

namespace {

DType otherDtype(DType d) { return d == DType::kFloat64 ? DType::kFloat32 : DType::kFloat64; }

// On the operand's device: a backend that serves CUDA tensors only (nccl)
// must see the mismatch, not refuse a host tensor.
Tensor longer(const Tensor& t) {
  return zeros({t.numel() + 1}, TensorOptions{}.withDType(t.dtype()).withDevice(t.device()));
}

// The CUDA device of an operation's tensors (an in-flight hang stalls its
// stream); the CPU when it has none.
Device cudaDeviceOf(const Operation& op) {
  for (const auto* list : {&op.inputs, &op.outputs}) {
    for (const Tensor& t : *list) {
      if (t.device().isCuda()) return t.device();
    }
  }
  return Device::cpu();
}

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
// Logs "<prefix> <what> ok|failed" when the Work completes ("done 12",
// "p2p_done send 1 12"); formatted then, not at every issue.
class DoneLogger : public comm::WorkObserver {
 public:
  DoneLogger(std::shared_ptr<FaultPlan> plan, const char* prefix, std::string what)
      : plan_(std::move(plan)), prefix_(prefix), what_(std::move(what)) {}
  void onCompleted(const comm::Work& work) override {
    plan_->log().write(
        fmt::format("{} {} {}", prefix_, what_, work.isSuccess() ? "ok" : "failed"));
  }

 private:
  std::shared_ptr<FaultPlan> plan_;
  const char* prefix_;
  std::string what_;
};
}  // namespace

WorkPtr FaultBackend::track(uint64_t seq, WorkPtr work) {
  work->addObserver(std::make_shared<DoneLogger>(plan_, "done", std::to_string(seq)));
  return work;
}

void FaultBackend::logOp(const Operation& op) {
  // A scatter's non-root ranks have no inputs: its output is what all share.
  const auto logged = op.type == OpType::kScatter ? op.outputs : op.inputs;
  int64_t numel = 0;
  std::string_view dtype = "-";
  for (const auto& t : logged) {
    numel += t.numel();
    dtype = dtypeName(t.dtype());
  }
  const std::string_view redop = comm::hasReduceOp(op.type) ? reduceOpName(op.reduceOp) : "-";
  fmt::memory_buffer line;
  fmt::format_to(std::back_inserter(line), "op {} {} {} {} {} {} {}", op.seq,
                 comm::opTypeName(op.type), numel, dtype, redop,
                 comm::hasRoot(op.type) ? op.root : -1, logged.size());
  plan_->log().write(std::string_view(line.data(), line.size()));
}

const FaultSpec* FaultBackend::before(const Operation& op) {
  const FaultSpec* f = plan_->onCollective(op.seq);
  if (!f) return nullptr;
  if (f->kind == "hang" && f->inFlight) {  // Note [A hang in flight]
    plan_->recordFired(*f, op.seq, f->durationS < 0 ? "in flight, forever"
                                                    : fmt::format("in flight, {}s", f->durationS));
    stallDeviceStream(cudaDeviceOf(op), plan_->hangLength(*f));
    return nullptr;  // the collective goes to the backend, behind the stall
  }
  if (f->kind == "hang" || f->kind == "crash" || f->kind == "straggler") {
    plan_->act(*f, op.seq);
    return nullptr;
  }
  plan_->recordFired(*f, op.seq, f->kind == "mismatch" ? f->mismatch
                                                       : std::string(comm::opTypeName(op.type)));
  return f;
}

WorkPtr FaultBackend::skipOrExtra(const FaultSpec& f, const Operation& op) {
  if (f.kind == "skip_collective") {
    std::vector<Tensor> outs = comm::writtenTensors(op);
    return comm::Work::completed(
        comm::makeWorkInfo(groupName_, rank(), op.type, op.seq, op.inputs, outs, op.timeout),
        outs);
  }
  if (f.kind == "extra_collective") issueExtraAllreduce(op);
  return nullptr;
}

void FaultBackend::issueExtraAllreduce(const Operation& op) {
  // On the device of the operation it precedes (nccl serves CUDA tensors only).
  const Device device = op.inputs.empty() ? Device::cpu() : op.inputs.front().device();
  Tensor one = zeros({1}, TensorOptions{}.withDevice(device));
  Operation extra;
  extra.type = OpType::kAllreduce;
  extra.inputs = extra.outputs = std::span<const Tensor>(&one, 1);
  extra.timeout = op.timeout;
  extra.seq = op.seq;
  logOp(extra);
  forward(extra);
}

void FaultBackend::unsupported(const FaultSpec& f, OpType op) const {
  throw ValueError(fmt::format("{}: fault mismatch = \"{}\" is not supported on {} (use "
                               "allreduce, allreduce_coalesced, broadcast or reduce)",
                               f.pos.str(), f.mismatch, comm::opTypeName(op)));
}

WorkPtr FaultBackend::mismatched(const FaultSpec& f, const Operation& op) {
  if (!comm::isInPlace(op.type)) unsupported(f, op.type);
  const std::string& m = f.mismatch;
  std::vector<Tensor> tensors(op.inputs.begin(), op.inputs.end());
  Operation changed = op;
  const bool allreduces = op.type == OpType::kAllreduce || op.type == OpType::kAllreduceCoalesced;
  if (m == "shape") {
    tensors.back() = longer(tensors.back());
  } else if (m == "dtype") {
    tensors.back() = tensors.back().to(otherDtype(tensors.back().dtype()));
  } else if (m == "reduce_op" && comm::hasReduceOp(op.type)) {
    changed.reduceOp = otherReduceOp(op.reduceOp);
  } else if (m == "root" && comm::hasRoot(op.type)) {
    changed.root = (op.root + 1) % size();
  } else if (m == "tensor_count" && allreduces) {
    tensors.push_back(tensors.back().clone());
    changed.type = OpType::kAllreduceCoalesced;
  } else if (m == "op" && (op.type == OpType::kAllreduce || op.type == OpType::kBroadcast)) {
    const bool toBroadcast = op.type == OpType::kAllreduce;
    changed.type = toBroadcast ? OpType::kBroadcast : OpType::kAllreduce;
    changed.root = toBroadcast ? 0 : -1;
    changed.reduceOp = comm::ReduceOp::kSum;
  } else {
    unsupported(f, op.type);
  }
  changed.inputs = changed.outputs = tensors;
  logOp(changed);
  return track(op.seq, forward(changed));
}

WorkPtr FaultBackend::pointToPoint(const Operation& op) {
  const bool isSend = op.type == OpType::kSend;
  const FaultSpec* f = plan_->onPointToPoint(isSend, op.peer);
  const std::string peer = op.peer >= 0 ? std::to_string(op.peer) : "any";
  const std::string what = fmt::format("{} {} {}", comm::opTypeName(op.type), peer, op.seq);
  Operation changed = op;
  std::vector<Tensor> tensor(1, isSend ? op.inputs.front() : op.outputs.front());
  if (f) {
    plan_->recordFired(*f, op.seq, f->mismatch.empty() ? what : what + " " + f->mismatch);
    if (f->kind == "hang" || f->kind == "crash" || f->kind == "straggler") plan_->act(*f, op.seq);
    if (f->kind == "skip_collective") return skippedPointToPoint(op, what);
    if (f->kind == "extra_collective") issueExtraAllreduce(op);
    if (f->kind == "mismatch") {
      const Tensor& mine = tensor.front();
      tensor.front() = f->mismatch == "shape" ? longer(mine) : mine.to(otherDtype(mine.dtype()));
      (isSend ? changed.inputs : changed.outputs) = tensor;
    }
  }
  const Tensor& t = tensor.front();
  plan_->log().write(
      fmt::format("p2p {} {} {} {}", what, t.numel(), dtypeName(t.dtype()), op.tag));
  WorkPtr work = forward(changed);
  work->addObserver(std::make_shared<DoneLogger>(plan_, "p2p_done", what));
  return work;
}

WorkPtr FaultBackend::skippedPointToPoint(const Operation& op, const std::string& what) {
  plan_->log().write(fmt::format("p2p_skipped {}", what));
  std::vector<Tensor> outs = comm::writtenTensors(op);
  return comm::Work::completed(comm::makeWorkInfo(groupName_, rank(), op.type, op.seq, op.inputs,
                                                  outs, op.timeout, op.peer, op.tag),
                               outs);
}

WorkPtr FaultBackend::intercept(const Operation& op) {
  if (comm::isPointToPoint(op.type)) return pointToPoint(op);
  const FaultSpec* f = before(op);
  if (f && f->kind == "mismatch") return mismatched(*f, op);
  if (f) {
    if (auto w = skipOrExtra(*f, op)) return w;
  }
  logOp(op);
  return track(op.seq, forward(op));
}

void installFaultInjection(std::shared_ptr<FaultPlan> plan) {
  comm::addBackendDecorator(
      "faults", comm::kLayerFault,
      [plan](comm::BackendPtr inner, const comm::BackendContext& ctx) -> comm::BackendPtr {
        if (ctx.groupDesc != "default_pg") return inner;
        return std::make_shared<FaultBackend>(std::move(inner), plan, ctx.groupName);
      });
}

}  // namespace distlab::emulator
