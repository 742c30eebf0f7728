#pragma once
// RankNames: how debug messages name a rank of a group.
//
// Note [Naming ranks]
// Group ranks index a group's members (what options, Work and the DETAIL
// checks use); global ranks index the world (what liveness records, flight-
// recorder dump files, the launcher and the scenario runner use). Inside a
// subgroup the two differ, and a message that says only "rank 1" cannot be
// acted on. So every debug message names a rank through RankNames:
//   group rank == global rank  ->  "rank 1"  (the default group, or a subgroup
//                                   member whose numbers coincide)
//   otherwise                  ->  "rank 1 of group 'g1' (global rank 3)"
// Lists name the group once: "ranks 0, 1 of group 'g1' (global ranks 1, 3)";
// a list is annotated as soon as one of its ranks differs.
// parseCulpritRanks() reads the ranks a debug message blames (the DETAIL
// wrapper's "Culprit rank(s): ..." line, a monitored barrier's verdict, a
// mismatch between two ranks) back as global ranks (the scenario runner's
// diagnosis).
// Thread-safety: immutable after construction.
#include <string>
#include <string_view>
#include <vector>

namespace distlab::comm {

class RankNames {
 public:
  RankNames() = default;
  // `globalRanks[r]` is the global rank of group rank r; empty: identity over `size`.
  RankNames(std::string groupName, std::vector<int> globalRanks, int size = 0);

  const std::string& groupName() const { return groupName_; }
  const std::vector<int>& globalRanks() const { return globalRanks_; }
  // The global rank of `groupRank`; `groupRank` itself when it is out of range.
  int global(int groupRank) const;
  bool differs(int groupRank) const { return global(groupRank) != groupRank; }

  // "rank 1" or "rank 1 of group 'g1' (global rank 3)"; capital: "Rank 1 ...".
  std::string name(int groupRank, bool capital = false) const;
  // "rank 1" / "ranks 1, 2", annotated as in the Note; capital: "Rank"/"Ranks".
  std::string names(const std::vector<int>& groupRanks, bool capital = false) const;
  // The list alone: "1, 2" or "1, 2 of group 'g1' (global ranks 2, 3)".
  std::string list(const std::vector<int>& groupRanks) const;

 private:
  std::string groupName_;
  std::vector<int> globalRanks_;
};

// The ranks `message` blames, as global ranks (the annotation's global list
// when present, else the plain list), from the first of: the DETAIL check's
// "Culprit rank(s): " line; a monitored barrier's verdict ("Rank 2 failed to
// pass monitoredBarrier"); a DETAIL mismatch with no majority ("Rank 0 is
// running collective: ..., but Rank 1 is running ...": both are suspects).
// Empty when the message blames nobody.
std::vector<int> parseCulpritRanks(std::string_view message);

}  // namespace distlab::comm
