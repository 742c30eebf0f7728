#pragma once
// Operation: one issued operation described as data, the argument of a
// decorator's single interception point (ForwardingBackend::intercept).
//
// Note [Operations as data]
// A Backend has one virtual per operation (19 of them) because backends
// implement each operation differently. A decorator -- fault injection, link
// emulation, the monitor and flight recorder, the DETAIL checks, CUDA staging
// -- mostly does not care which operation it sees: it logs, delays, records,
// checks or copies the tensors, and forwards. Written out per operation, every
// decorator repeated 19 methods, and coverage drifted silently (a decorator
// that forgot send/recv passed them through untouched). So ForwardingBackend
// turns each of the 19 calls into an Operation and hands it to one virtual,
// intercept(); forward() turns it back into the inner backend's call. A new
// operation is added in three places only: the OpType, the Backend virtual
// and the two conversions here; every decorator sees it from then on, and
// decorator_coverage_test walks every OpType through every decorator.
//
// The tensors are views of the caller's arguments (spans), so building an
// Operation allocates nothing. A decorator that changes the operation (a
// fault's mismatch, CUDA staging's host stand-ins) copies it, points the copy
// at storage of its own that outlives the forward() call, and forwards that.
//
// Which field an operation uses (others stay empty / -1):
//   type                 inputs       outputs        other fields
//   broadcast            {t}          {t}            root
//   allreduce            {t}          {t}            reduceOp
//   allreduce_coalesced  ts           ts             reduceOp
//   reduce               {t}          {t}            reduceOp, root
//   allgather            {in}         outs           (outputs[q] from rank q)
//   _allgather_base      {in}         {out}
//   allgather_coalesced  ins          -              outputLists[i][q]
//   gather               {in}         outs (root)    root
//   scatter              ins (root)   {out}          root
//   reduce_scatter       ins          {out}          reduceOp
//   _reduce_scatter_base {in}         {out}          reduceOp
//   alltoall             ins          outs
//   alltoall_base        {in}         {out}          inputSplits, outputSplits
//   barrier              -            -
//   send                 {t}          -              peer (destination), tag
//   recv                 -            {t}            peer (source), tag
//   recvanysource        -            {t}            tag
// In-place operations (the first four) have inputs and outputs over the same
// tensors. Every operation carries seq, timeout and asyncOp.
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/comm/types.hpp"
#include "runtime/comm/work.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab::comm {

class Backend;

struct Operation {
  OpType type = OpType::kUnknown;
  std::span<const Tensor> inputs;
  std::span<const Tensor> outputs;
  std::span<const std::vector<Tensor>> outputLists;  // allgather_coalesced only
  std::span<const int64_t> inputSplits;               // alltoall_base only (rows of dim 0)
  std::span<const int64_t> outputSplits;
  ReduceOp reduceOp = ReduceOp::kSum;  // meaningful where hasReduceOp()
  int root = -1;                       // broadcast, reduce, gather, scatter
  int peer = -1;                       // send / recv; -1 for recv from any source
  int tag = 0;                         // send / recv / recv from any source
  Milliseconds timeout = kUnsetTimeout;
  bool asyncOp = true;
  uint64_t seq = 0;
};

// Every operation type an Operation can carry, in OpType order (kUnknown
// excluded). Tests walk it; a new OpType must be added here.
inline constexpr OpType kAllOperationTypes[] = {
    OpType::kBroadcast,     OpType::kAllreduce,         OpType::kAllreduceCoalesced,
    OpType::kReduce,        OpType::kAllgather,         OpType::kAllgatherBase,
    OpType::kAllgatherCoalesced, OpType::kGather,       OpType::kScatter,
    OpType::kReduceScatter, OpType::kReduceScatterBase, OpType::kAlltoall,
    OpType::kAlltoallBase,  OpType::kBarrier,           OpType::kSend,
    OpType::kRecv,          OpType::kRecvAnysource};
static_assert(std::size(kAllOperationTypes) == static_cast<size_t>(OpType::kUnknown),
              "kAllOperationTypes must list every OpType but kUnknown");

// True for the operations that take a reduce op / a root.
bool hasReduceOp(OpType type);
bool hasRoot(OpType type);
// True for broadcast, allreduce, allreduce_coalesced and reduce (inputs and
// outputs are the same tensors).
bool isInPlace(OpType type);

// Bytes of the operation's input tensors / output tensors (output lists
// included).
int64_t inputBytes(const Operation& op);
int64_t outputBytes(const Operation& op);
// The tensors the operation writes, as one list (outputLists flattened).
std::vector<Tensor> writtenTensors(const Operation& op);

// Issues `op` on `backend` through the matching Backend virtual (the
// conversion back from data to a call). Throws ValueError for kUnknown.
WorkPtr issueOperation(Backend& backend, const Operation& op);

}  // namespace distlab::comm
