#pragma once
// The replay behind `distlab predict`: ranks run programs of compute,
// collective issues and waits; collectives take the network model's time
// (emulator/link/collective_cost.hpp) and share links while they overlap.
//
// Note [Replay]
// Each rank runs its actions in order on one thread of time: kCompute
// advances its clock by the action's seconds, kIssue hands a collective to
// the network and goes on (what DDP's bucket launch and FSDP's prefetch do),
// kWait blocks until that collective has completed (the clock jumps to its
// end when later), kMark records the clock under a label (a step's begin
// and end). A collective starts when every rank it names has issued it and
// each of them has finished its previous collective on the same stream (a
// process group's operations run one after another, as on one NCCL stream
// or distlab's progress thread): so a straggler delays everyone who waits
// for a collective it takes part in, and nobody else.
//
// Note [Sharing links]
// A running collective spends its cost (CollectiveCost) in three phases:
// latency (never shared), then its intra-node bandwidth part, then its
// inter-node part. During a bandwidth phase it progresses at 1/k of full
// speed, k the most collectives in a phase of the same class on any node it
// touches (each link class of each node is a resource shared fairly): two
// equal all-reduces over the same links at the same time both end after
// latency + twice the bandwidth part. Rates change only when a collective
// starts or finishes a phase, so the replay steps from event to event.
//
// Note [Messages in the replay]
// A send and its receive are one SimCollective of two ranks (op kSend, the
// sender first): it starts when both have issued it, so a receive posted
// early waits for its sender and a send for its receiver (a rendezvous, as
// NCCL's send/recv; the link emulator does the same, Note [Messages on
// emulated links]), and takes the model's point-to-point time on the link
// between the pair. Its stream is the group and the direction ("default
// 0->1"): messages one way between a pair are delivered in order (MPI's
// non-overtaking rule), while the other direction, other pairs and the
// group's collectives go on beside them, sharing links as above. A trace
// pairs a send with the receive of the same number between the pair
// (comm_trace.hpp): messages of one pair under different tags, received in
// another order than sent, would be paired by order, not by tag.
//
// A wait on a collective that can never start (a rank it names never issues
// it) is a deadlock: simulate() throws Error naming the collective, the
// ranks that issued it and those that did not.
#include <map>
#include <string>
#include <vector>

#include "emulator/link/collective_cost.hpp"

namespace distlab::emulator {

struct SimCollective {
  std::string name;         // shown in tables and errors ("allreduce #5 on w1_default")
  std::string stream;       // operations of one stream run in issue order (the group)
  comm::OpType op = comm::OpType::kAllreduce;
  int64_t bytes = 0;        // the nccl-tests size (link_model.hpp)
  std::vector<int> ranks;   // global ranks taking part (send/recv: the pair)
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;
};

struct SimAction {
  enum class Kind { kCompute, kIssue, kWait, kMark };
  Kind kind = Kind::kCompute;
  double seconds = 0;     // kCompute
  int collective = -1;    // kIssue, kWait: index into SimInput::collectives
  std::string label;      // kMark
};

struct SimInput {
  Topology topology;
  std::vector<SimCollective> collectives;
  std::vector<std::vector<SimAction>> ranks;  // one program per rank
};

struct SimCollectiveResult {
  CollectiveCost cost;     // alone on the links
  double issuedS = 0;      // the last rank's issue
  double startS = 0;       // when it began (issued and streams free)
  double endS = 0;
  int lastIssuer = -1;     // the rank whose issue came last
};

struct SimRankResult {
  double endS = 0;         // the clock after the last action
  double computeS = 0;     // sum of kCompute
  double blockedS = 0;     // time spent in kWait beyond the clock: exposed communication
  std::map<std::string, std::vector<double>> marks;  // label -> clock at each kMark
  struct Span {
    double beginS, endS;
    int collective;  // -1: compute
  };
  std::vector<Span> spans;  // compute and blocked spans, in order (for a timeline)
};

struct SimResult {
  std::vector<SimRankResult> ranks;
  std::vector<SimCollectiveResult> collectives;
  double endS = 0;  // the latest rank end
};

// Throws ValueError for malformed input (an action naming no collective, a
// collective naming a rank out of range or twice, a rank issuing or waiting
// on a collective it is not part of, negative or non-finite seconds, a wait
// before the issue) and Error for a deadlock (above).
SimResult simulate(const SimInput& input);

}  // namespace distlab::emulator
