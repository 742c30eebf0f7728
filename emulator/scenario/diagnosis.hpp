#pragma once
// What happened in one scenario run, reconstructed from the ranks' exit
// status, their rank<R>.json results and their event logs (event_log.hpp):
// the observed outcome, the culprit ranks and a one-line diagnosis, and how
// long the system took to detect the injected fault.
//
// Ranks are global ranks throughout (a culprit the DETAIL layer names in a
// subgroup is translated, Note [Naming ranks] in rank_names.hpp).
// Culprit rules, first match wins:
//   1. ranks that died on their own (exit != 0 or a signal, no error report)
//      -- "rank 1 killed by SIGKILL at seq 3";
//   2. the first collective sequence number where the ranks' event logs
//      disagree: ranks that never issued it ("rank 2 never issued seq 5
//      (ALLREDUCE)"; not a rank blocked in a receive, which rule 2b judges,
//      nor one whose call the group refused after a peer's failure, which
//      it did issue), issued it twice (an extra collective) or issued a
//      different operation than the majority (op, size, dtype, reduce op,
//      root, tensor count); with a tie no majority exists and every
//      disagreeing rank is named, except in a rooted collective, where the
//      ranks that disagree with the root are;
//   2b. point-to-point messages, matched in order per sender, receiver and
//      tag: a receive that failed or never completed because its sender never
//      sent that message names the sender ("rank 0 never sent message 3 to
//      rank 1 (tag 0); rank 1's recv waited for it"); a message whose size or
//      dtype differs between the send and the receive names both ranks (two
//      ranks have no majority);
//   3. the rank whose loss or parameters went non-finite first ("rank 1 went
//      non-finite first, at step 4 (loss = inf)", rank_result.hpp; the note
//      is added whichever rule names the culprits);
//   3b. ranks whose final parameter checksum differs from the majority;
//   4. a straggler: the rank that issued a collective last, when it did so
//      more than 50 ms after the others.
#include <optional>
#include <string>
#include <vector>

#include "emulator/scenario/rank_processes.hpp"
#include "emulator/scenario/scenario.hpp"
#include "emulator/workloads/rank_result.hpp"

namespace distlab::emulator {

struct OpRecord {
  int64_t us = 0;
  uint64_t seq = 0;
  std::string fingerprint;  // "ALLREDUCE 1024 float32 SUM -1 1"
  std::string op;           // "ALLREDUCE"
  int64_t doneUs = 0;       // 0 when it never completed
  bool failed = false;
};

// One "p2p" line of the event log: a send or receive this rank issued.
struct P2PRecord {
  std::string id;           // "<TYPE> <peer|any> <k>", as its p2p_done line names it
  bool isSend = false;
  int peer = -1;            // -1: a receive from any source
  std::string shape;        // "<numel> <dtype>"
  int tag = 0;
  bool done = false, failed = false;
};

struct RankEvents {
  std::vector<OpRecord> ops;
  std::vector<P2PRecord> p2p;  // in issue order
  int64_t firstFaultUs = 0;
  std::string firstFault;   // "crash seq=3 step=-1 sigkill"
  std::vector<std::pair<int64_t, std::string>> faults;  // (us, text)
  std::vector<std::pair<int64_t, int>> steps;           // (us, step)
};

RankEvents readRankEvents(const std::string& path);  // empty when missing

struct Diagnosis {
  Outcome outcome = Outcome::kSuccess;
  std::vector<int> culprits;
  std::string text;
  std::optional<double> detectionS;  // fault fired -> detected
  int64_t faultUs = 0;
};

Diagnosis diagnose(const Scenario& s, const std::vector<RankExit>& exits,
                   const std::vector<std::optional<RankResult>>& results,
                   const std::vector<RankEvents>& events, int64_t analysisUs);

}  // namespace distlab::emulator
