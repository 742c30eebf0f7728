#pragma once
// FaultSpec: one [[faults]] entry of a scenario file, as the fault plan
// (fault_plan.hpp) consumes it. It lives in faults/ so the plan needs nothing
// from the scenario room above it; the scenario parser fills it and checks
// every field (emulator/scenario/fault_expect_parser.cpp).
#include <cstdint>
#include <string>
#include <vector>

#include "emulator/faults/source_pos.hpp"

namespace distlab::emulator {

struct FaultSpec {
  std::string kind;            // see kFaultKinds
  std::vector<int> ranks;      // ranks it applies to (store faults: default all)
  // What the trigger counts: "" the world group's collectives; "send" or
  // "recv" this rank's point-to-point operations of that kind on the world
  // group, only those with `peer` when it is set (Note [Point-to-point
  // triggers] in fault_plan.hpp).
  std::string on;
  int peer = -1;               // on send/recv: the peer (-1: any)
  uint64_t atSeq = 0;          // collective sequence number, or the n-th send/recv (0: unset)
  int atStep = -1;             // training step (from 0; -1: unset)
  int count = 1;               // consecutive operations affected (straggler)
  double durationS = -1;       // hang: seconds; < 0 forever
  // hang on a CUDA backend (nccl): the collective is issued and its device
  // stream stalls instead of the calling thread (Note [A hang in flight]).
  bool inFlight = false;
  double delayMs = 0;          // straggler / slow_store
  std::string crashMode = "exit";  // exit | abort | sigkill
  int exitCode = 1;
  std::string mismatch;        // shape | dtype | op | reduce_op | root | tensor_count
  int extraBatches = 1;        // uneven_data: batches added on the chosen ranks (training)
  int extraSamples = 0;        // uneven_data: samples added to a program's DistributedSampler
  int bit = 30;                // bit_flip: which bit of the first gradient element
  std::string parameter;       // unused_param on a program: the one left out ("": the last)
  SourcePos pos;
};

// Every fault kind a scenario may name (fault_spec.cpp), in the order the
// parser lists them in its error message.
extern const std::vector<std::string> kFaultKinds;
// The mismatches a point-to-point trigger (`on = "send"|"recv"`) may make: a
// message's size or dtype (the kinds it may fire are those whose [[faults]]
// keys include `on`, in the scenario parser's table).
extern const std::vector<std::string> kPointToPointMismatches;

}  // namespace distlab::emulator
