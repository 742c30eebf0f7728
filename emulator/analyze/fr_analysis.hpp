#pragma once
// analyzeDumps: reads every rank's flight-recorder dump and reports, per
// group, the first divergence (`distlab analyze DUMP...`; PyTorch's
// fr_trace / torchfrtrace; docs/pytorch-semantics.md, "Flight recorder").
//
// Note [First divergence]
// Collectives of a group are matched across ranks by collective_seq_id; the
// first sequence number (from the oldest one every rank still holds) where
// the ranks disagree is reported:
//   NOT_JOINED               some ranks have no entry: they never joined. Ranks
//                            with no dump at all are listed apart ("no dump:
//                            the process most likely died").
//   EXTRA_COLLECTIVE         the ranks that did join are a minority and every
//                            missing rank finished all it had issued: the
//                            joined ranks issued a collective the others never do.
//   COLLECTIVE_TYPE_MISMATCH op differs; SIZE_OR_SYNTAX_MISMATCH sizes differ
//                            (uneven allgather/alltoall are cross-checked, not
//                            compared); DTYPE_MISMATCH dtypes differ;
//                            REDUCE_OP_MISMATCH reduce ops differ (where every
//                            rank's dump records one); ROOT_MISMATCH the root of
//                            a broadcast, reduce, gather or scatter differs. The
//                            culprit is the minority against a strict majority,
//                            else every rank that differs from the lowest rank.
//   NOT_FINISHED             all joined, some did not finish: the culprits are
//                            the ranks that joined but did not finish.
// Point-to-point operations are matched per (sender, receiver) by p2p_seq_id:
// UNMATCHED_P2P (one side never posted; culprit: that side) and P2P_MISMATCH
// (element count or dtype differ; culprits: both).
// Each kind also has the match state PyTorch's analyzer would give it
// (torchMatchState: Note [PyTorch's match states]).
// Culprits and rank lists are global ranks; the text of a divergence in a
// group whose group ranks differ from its global ranks ends with the mapping
// ("(Ranks are global ranks; group w1_g1 holds global ranks {1, 3} as group
// ranks 0 to 1.)").
#include <string>
#include <vector>

#include "emulator/analyze/dump_reader.hpp"
#include "emulator/analyze/torch_dump_reader.hpp"

namespace distlab::emulator {

struct Divergence {
  std::string kind;  // see the Note
  std::string group;
  std::string groupDesc;
  uint64_t seq = 0;       // collective or p2p sequence number
  std::string op;         // "ALLREDUCE", ...
  std::vector<int> culprits;
  std::vector<int> notJoined;    // dumped, never joined
  std::vector<int> noDump;       // expected, no dump found
  std::vector<int> notFinished;  // joined, did not finish
  std::string text;              // one paragraph
  std::string matchState;        // torchMatchState(kind)
};

// Note [PyTorch's match states]
// PyTorch's analyzer (fr_trace) classifies the first collective the ranks
// disagree on with one of its MatchStates, or reports that not all ranks
// joined it; distlab's kinds map onto them:
//   COLLECTIVE_TYPE_MISMATCH -> COLLECTIVE_TYPE_MISMATCH
//   SIZE_OR_SYNTAX_MISMATCH, P2P_MISMATCH -> SIZE_OR_SYNTAX_MISMATCH
//   DTYPE_MISMATCH -> COLLECTIVE_DTYPE_MISMATCH
//   NOT_FINISHED -> COLLECTIVE_STATE_MISMATCH where some ranks finished,
//     FULLY_MATCHED where none did (every state is the same)
//   REDUCE_OP_MISMATCH, ROOT_MISMATCH -> FULLY_MATCHED (PyTorch's dumps hold
//     neither, so its analyzer cannot see them)
//   NOT_JOINED, EXTRA_COLLECTIVE, UNMATCHED_P2P -> NOT_ALL_RANKS_JOINED (its
//     "Not all ranks joining collective"; UNDECIDED where the ranks that did
//     not join left no dump, as PyTorch cannot tell then)
// and no divergence is FULLY_MATCHED. distlab goes further where PyTorch's
// analyzer does not look: it names ranks that left no dump as dead, tells an
// extra collective from a missing one, and matches point-to-point operations
// per peer, compares reduce ops and roots.
std::string torchMatchState(const Divergence& d);

struct AnalysisResult {
  std::vector<int> ranks;  // ranks whose dumps were read
  std::vector<Divergence> divergences;  // at most one per group, then p2p findings
  std::string text;                     // the whole report
  bool foundDivergence() const { return !divergences.empty(); }
};

// Reads distlab's dumps and PyTorch's (pickle or JSON; torch_dump_reader.hpp)
// alike. Throws ValueError for unreadable or malformed dumps (dump_reader.hpp),
// for no paths, and for two dumps of the same rank.
AnalysisResult analyzeDumps(const std::vector<std::string>& paths);
AnalysisResult analyzeRankDumps(const std::vector<RankDump>& dumps);

}  // namespace distlab::emulator
