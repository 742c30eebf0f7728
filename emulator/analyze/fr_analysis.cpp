#include "emulator/analyze/fr_analysis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "runtime/core/errors.hpp"
#include "runtime/core/rank_ranges.hpp"

namespace distlab::emulator {
namespace {

using Sizes = std::vector<std::vector<int64_t>>;

std::string sizesText(const Sizes& s) {
  std::vector<std::string> parts;
  for (const auto& v : s) parts.push_back(fmt::format("[{}]", fmt::join(v, ", ")));
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// "{0, 2-1023}": runs of four or more folded (runtime/core/rank_ranges.hpp).
std::string ranksText(const std::vector<int>& r) { return "{" + foldRankRuns(r, ", ") + "}"; }

// Ranks outside the strict-majority value; without a strict majority, the
// ranks that differ from the lowest rank's value.
std::vector<int> minority(const std::map<int, std::string>& values, std::string* expected) {
  std::map<std::string, int> count;
  for (const auto& [r, v] : values) ++count[v];
  std::string ref = values.begin()->second;
  for (const auto& [v, n] : count) {
    if (n * 2 > static_cast<int>(values.size())) ref = v;
  }
  std::vector<int> out;
  for (const auto& [r, v] : values) {
    if (v != ref) out.push_back(r);
  }
  *expected = ref;
  return out;
}

// Collectives whose entry's peer is their root (group rank).
bool hasRoot(const std::string& op) {
  return op == "BROADCAST" || op == "REDUCE" || op == "GATHER" || op == "SCATTER";
}

// A dump's entries by group, built once: looking a group's entries up in
// every entry of every dump made the analysis quadratic in groups x entries.
using EntriesByGroup = std::map<std::string, std::vector<const DumpEntry*>>;

struct View {
  const RankDump* dump = nullptr;
  const DumpGroup* group = nullptr;
  size_t groupRank = 0;
  std::vector<const DumpEntry*> entries;  // of this group
  std::map<uint64_t, const DumpEntry*> coll;
};

class GroupAnalysis {
 public:
  GroupAnalysis(const DumpGroup& cfg, const std::map<int, const RankDump*>& byRank,
                const std::map<int, EntriesByGroup>& entries)
      : cfg_(cfg) {
    for (size_t i = 0; i < cfg.ranks.size(); ++i) {
      const int g = cfg.ranks[i];
      auto it = byRank.find(g);
      if (it == byRank.end()) {
        noDump_.push_back(g);
        continue;
      }
      View& v = views_[g];
      v.dump = it->second;
      v.groupRank = i;
      auto git = it->second->groups.find(cfg.name);
      if (git != it->second->groups.end()) v.group = &git->second;
      if (entries.at(g).count(cfg.name)) v.entries = entries.at(g).at(cfg.name);
      for (const DumpEntry* e : v.entries) {
        if (!e->isP2P) v.coll[e->collectiveSeq] = e;
      }
    }
  }

  std::optional<Divergence> collectives();
  std::optional<Divergence> pointToPoint();

 private:
  Divergence base(const std::string& kind, uint64_t seq, const std::string& op) const {
    Divergence d;
    d.kind = kind;
    d.group = cfg_.name;
    d.groupDesc = cfg_.desc;
    d.seq = seq;
    d.op = op;
    d.noDump = noDump_;
    return d;
  }
  Divergence joinDivergence(uint64_t s, const std::vector<int>& joined,
                            const std::vector<int>& notJoined) const;
  std::optional<Divergence> mismatch(uint64_t s, const std::vector<int>& joined) const;
  std::optional<Divergence> crossCheck(uint64_t s, const std::vector<int>& joined) const;
  size_t groupRank(int global) const { return views_.at(global).groupRank; }

  const DumpGroup& cfg_;
  std::map<int, View> views_;
  std::vector<int> noDump_;
};

Divergence GroupAnalysis::joinDivergence(uint64_t s, const std::vector<int>& joined,
                                         const std::vector<int>& notJoined) const {
  const DumpEntry* e = joined.empty() ? nullptr : views_.at(joined.front()).coll.at(s);
  const std::string op = e ? e->opType : "?";
  bool othersIdle = noDump_.empty() && !notJoined.empty();
  std::vector<std::string> lastOf;
  for (int r : notJoined) {
    const DumpGroup* g = views_.at(r).group;
    const uint64_t enq = g ? g->lastEnqueued : 0, done = g ? g->lastCompleted : 0;
    othersIdle &= enq == done && enq < s;
    lastOf.push_back(fmt::format("{}: {}", r, enq));
  }
  if (othersIdle && joined.size() * 2 < joined.size() + notJoined.size()) {
    Divergence d = base("EXTRA_COLLECTIVE", s, op);
    d.culprits = joined;
    d.notJoined = notJoined;
    d.text = fmt::format(
        "Extra collective on ranks {}: they issued collective {} ({}) in group {} ({}) that "
        "ranks {} never issued; those ranks completed every collective they issued (last "
        "enqueued per rank: {}). Culprit ranks {}; Error type: EXTRA_COLLECTIVE",
        ranksText(joined), s, e ? e->profilingName : op, cfg_.name, cfg_.desc,
        ranksText(notJoined), fmt::join(lastOf, ", "), ranksText(joined));
    return d;
  }
  Divergence d = base("NOT_JOINED", s, op);
  d.notJoined = notJoined;
  d.culprits = notJoined;
  d.culprits.insert(d.culprits.end(), noDump_.begin(), noDump_.end());
  std::sort(d.culprits.begin(), d.culprits.end());
  std::string text = fmt::format(
      "Not all ranks joining collective {} in group {} ({}) / collective: {} / missing ranks: "
      "{} / joined ranks: {} / input sizes: {} / expected ranks: {} / collective state: {}",
      s, cfg_.name, cfg_.desc, e ? e->profilingName : op, ranksText(d.culprits),
      ranksText(joined), e ? sizesText(e->inputSizes) : "[]", cfg_.ranks.size(),
      e ? e->state : "none");
  if (!notJoined.empty()) {
    text += fmt::format(" / ranks that never joined (dumped, alive at dump time; last enqueued "
                        "collective: {})",
                        fmt::join(lastOf, ", "));
  }
  if (!noDump_.empty()) {
    text += fmt::format(" / ranks {} left no dump: the process most likely died",
                        ranksText(noDump_));
  }
  d.text = text + fmt::format(". Culprit ranks {}; Error type: NOT_JOINED", ranksText(d.culprits));
  return d;
}

std::optional<Divergence> GroupAnalysis::mismatch(uint64_t s,
                                                  const std::vector<int>& joined) const {
  std::map<int, std::string> ops, sizes, dtypes;
  for (int r : joined) ops[r] = views_.at(r).coll.at(s)->opType;
  std::string expected;
  auto culprits = minority(ops, &expected);
  auto report = [&](const char* kind, const char* what, const std::map<int, std::string>& v) {
    Divergence d = base(kind, s, ops.begin()->second);
    d.culprits = culprits;
    std::vector<std::string> parts;
    for (int c : culprits) {
      parts.push_back(fmt::format("Culprit rank {}; Error type: {}, Expected {}: '{}' does not "
                                  "match found {}: '{}'",
                                  c, kind, what, expected, what, v.at(c)));
    }
    d.text = fmt::format("Collective {} in group {} ({}): {}", s, cfg_.name, cfg_.desc,
                         fmt::join(parts, "; "));
    return d;
  };
  if (!culprits.empty()) return report("COLLECTIVE_TYPE_MISMATCH", "collective type", ops);
  const std::string op = ops.begin()->second;
  const bool uneven = op == "ALLGATHER" || op == "ALLGATHER_COALESCED" || op == "ALLTOALL" ||
                      op == "ALLTOALL_BASE";
  const bool useOutput = op == "SCATTER" || op == "ALLGATHER" || op == "ALLGATHER_COALESCED";
  for (int r : joined) {
    const DumpEntry* e = views_.at(r).coll.at(s);
    if (op != "ALLTOALL" && op != "ALLTOALL_BASE") {
      sizes[r] = sizesText(useOutput ? e->outputSizes : e->inputSizes);
    }
    dtypes[r] = fmt::format("{}", fmt::join(useOutput ? e->outputDtypes : e->inputDtypes, ","));
  }
  if (!sizes.empty() && !(culprits = minority(sizes, &expected)).empty()) {
    return report("SIZE_OR_SYNTAX_MISMATCH", useOutput ? "output sizes" : "input sizes", sizes);
  }
  if (!(culprits = minority(dtypes, &expected)).empty()) {
    return report("DTYPE_MISMATCH", "dtypes", dtypes);
  }
  std::map<int, std::string> reduceOps, roots;
  for (int r : joined) {
    const DumpEntry* e = views_.at(r).coll.at(s);
    if (!e->reduceOp.empty()) reduceOps[r] = e->reduceOp;
    if (hasRoot(op)) roots[r] = std::to_string(e->peer);
  }
  // Dumps that record no reduce op (PyTorch's) are not compared.
  if (reduceOps.size() == joined.size() && !(culprits = minority(reduceOps, &expected)).empty()) {
    return report("REDUCE_OP_MISMATCH", "reduce op", reduceOps);
  }
  if (!roots.empty() && !(culprits = minority(roots, &expected)).empty()) {
    return report("ROOT_MISMATCH", "root (group rank)", roots);
  }
  return uneven ? crossCheck(s, joined) : std::nullopt;
}

// Uneven allgather/alltoall: what rank r sends to q must be what q expects from r.
std::optional<Divergence> GroupAnalysis::crossCheck(uint64_t s,
                                                    const std::vector<int>& joined) const {
  std::map<int, int> involvement;
  std::vector<std::string> found;
  for (int r : joined) {
    const DumpEntry* er = views_.at(r).coll.at(s);
    for (int q : joined) {
      const DumpEntry* eq = views_.at(q).coll.at(s);
      const size_t gr = groupRank(r), gq = groupRank(q);
      int64_t sent = -1, expected = -1;
      if (er->opType == "ALLTOALL_BASE") {
        if (gq < er->inputSplits.size() && gr < eq->outputSplits.size()) {
          sent = er->inputSplits[gq], expected = eq->outputSplits[gr];
        }
      } else if (er->opType == "ALLTOALL") {
        if (gq < er->inputSizes.size() && gr < eq->outputSizes.size()) {
          sent = numel(er->inputSizes[gq]), expected = numel(eq->outputSizes[gr]);
        }
      } else if (!er->inputSizes.empty() && gr < eq->outputSizes.size()) {
        sent = numel(er->inputSizes[0]), expected = numel(eq->outputSizes[gr]);
      }
      if (sent == expected) continue;
      ++involvement[r];
      ++involvement[q];
      found.push_back(fmt::format("rank {} sends {} to rank {}, which expects {}", r, sent, q,
                                  expected));
    }
  }
  if (found.empty()) return std::nullopt;
  Divergence d = base("SIZE_OR_SYNTAX_MISMATCH", s, views_.at(joined[0]).coll.at(s)->opType);
  int best = -1, bestN = 0, ties = 0;
  for (auto [r, n] : involvement) {
    if (n > bestN) {
      best = r, bestN = n, ties = 0;
    } else if (n == bestN) {
      ++ties;
    }
  }
  if (ties == 0) d.culprits = {best};
  d.text = fmt::format("Collective {} in group {} ({}): {}{}; Error type: SIZE_OR_SYNTAX_MISMATCH",
                       s, cfg_.name, cfg_.desc, fmt::join(found, "; "),
                       d.culprits.empty() ? "" : fmt::format("; Culprit rank {}", best));
  return d;
}

std::optional<Divergence> GroupAnalysis::collectives() {
  uint64_t lo = 1, hi = 0;
  for (const auto& [r, v] : views_) {
    if (v.coll.empty()) continue;
    lo = std::max(lo, v.coll.begin()->first);
    hi = std::max(hi, v.coll.rbegin()->first);
  }
  for (uint64_t s = lo; s <= hi; ++s) {
    std::vector<int> joined, notJoined;
    bool allCompleted = true;
    for (const auto& [r, v] : views_) {
      auto it = v.coll.find(s);
      if (it == v.coll.end()) {
        notJoined.push_back(r);
      } else {
        joined.push_back(r);
        allCompleted &= it->second->state == "completed";
      }
    }
    if (!notJoined.empty() || (!noDump_.empty() && !allCompleted)) {
      return joinDivergence(s, joined, notJoined);
    }
    if (auto d = mismatch(s, joined)) return d;
    if (allCompleted) continue;
    Divergence d = base("NOT_FINISHED", s, views_.at(joined[0]).coll.at(s)->opType);
    std::vector<int> finished;
    std::vector<std::string> states;
    for (int r : joined) {
      const DumpEntry* e = views_.at(r).coll.at(s);
      (e->state == "completed" ? finished : d.notFinished).push_back(r);
      states.push_back(fmt::format("{}: {}{}{}", r, e->state, e->timedOut ? " (timed out)" : "",
                                   e->error.empty() ? "" : " [" + e->error + "]"));
    }
    if (!finished.empty()) d.culprits = d.notFinished;
    d.text = fmt::format(
        "Ranks {} joined collective {} ({}) in group {} ({}) but did not finish it; ranks {} "
        "finished it. States: {}. Error type: NOT_FINISHED",
        ranksText(d.notFinished), s, d.op, cfg_.name, cfg_.desc, ranksText(finished),
        fmt::join(states, "; "));
    return d;
  }
  return std::nullopt;
}

std::optional<Divergence> GroupAnalysis::pointToPoint() {
  // (sender, receiver) global ranks -> k -> entry
  std::map<std::pair<int, int>, std::map<uint64_t, const DumpEntry*>> sends, recvs;
  for (const auto& [r, v] : views_) {
    for (const DumpEntry* e : v.entries) {
      if (!e->isP2P || e->peer < 0 || e->peer >= static_cast<int>(cfg_.ranks.size())) continue;
      const int peer = cfg_.ranks[e->peer];
      if (e->opType == "SEND") sends[{r, peer}][e->p2pSeq] = e;
      if (e->opType == "RECV") recvs[{peer, r}][e->p2pSeq] = e;
    }
  }
  std::set<std::pair<int, int>> pairs;
  for (auto& [k, v] : sends) pairs.insert(k);
  for (auto& [k, v] : recvs) pairs.insert(k);
  auto has = [&](int r) { return views_.count(r) > 0; };
  for (auto [src, dst] : pairs) {
    auto& s = sends[{src, dst}];
    auto& r = recvs[{src, dst}];
    uint64_t lo = 1, hi = 0;
    if (!s.empty()) lo = std::max(lo, s.begin()->first), hi = std::max(hi, s.rbegin()->first);
    if (!r.empty()) lo = std::max(lo, r.begin()->first), hi = std::max(hi, r.rbegin()->first);
    for (uint64_t k = lo; k <= hi; ++k) {
      const DumpEntry* se = s.count(k) ? s[k] : nullptr;
      const DumpEntry* re = r.count(k) ? r[k] : nullptr;
      if (se && re) {
        const int64_t sn = se->inputSizes.empty() ? 0 : numel(se->inputSizes[0]);
        const int64_t rn = re->outputSizes.empty() ? 0 : numel(re->outputSizes[0]);
        if (sn == rn && se->inputDtypes == re->outputDtypes) continue;
        Divergence d = base("P2P_MISMATCH", k, "SEND/RECV");
        d.culprits = {std::min(src, dst), std::max(src, dst)};
        d.text = fmt::format(
            "Point-to-point mismatch in group {} ({}): rank {} send #{} to rank {} has {} "
            "elements of {}, but rank {} recv #{} from rank {} expects {} elements of {}. "
            "Culprit ranks {}; Error type: P2P_MISMATCH",
            cfg_.name, cfg_.desc, src, k, dst, sn, fmt::join(se->inputDtypes, ","), dst, k, src,
            rn, fmt::join(re->outputDtypes, ","), ranksText(d.culprits));
        return d;
      }
      const int missing = se ? dst : src;
      if (!has(missing) && std::find(noDump_.begin(), noDump_.end(), missing) == noDump_.end()) {
        continue;
      }
      Divergence d = base("UNMATCHED_P2P", k, se ? "SEND" : "RECV");
      d.culprits = {missing};
      d.text = fmt::format(
          "Unmatched point-to-point operation in group {} ({}): rank {} {} #{} {} rank {} was "
          "never matched: rank {} {}. Culprit rank {}; Error type: UNMATCHED_P2P",
          cfg_.name, cfg_.desc, se ? src : dst, se ? "send" : "recv", k, se ? "to" : "from",
          se ? dst : src, missing,
          has(missing) ? fmt::format("posted {} {} only", se ? "recvs" : "sends",
                                     (se ? r : s).size())
                       : "left no dump (the process most likely died)",
          missing);
      return d;
    }
  }
  return std::nullopt;
}

// Rank numbers in a report are global ranks (Note [Naming ranks]); a group
// whose group ranks differ says how they map.
std::string subgroupNote(const DumpGroup& cfg) {
  bool identity = true;
  for (size_t i = 0; i < cfg.ranks.size(); ++i) identity &= cfg.ranks[i] == static_cast<int>(i);
  if (identity) return "";
  return fmt::format(" (Ranks are global ranks; group {} holds global ranks {} as group ranks 0 "
                     "to {}.)",
                     cfg.name, ranksText(cfg.ranks), cfg.ranks.size() - 1);
}

}  // namespace

std::string torchMatchState(const Divergence& d) {
  if (d.kind == "COLLECTIVE_TYPE_MISMATCH") return d.kind;
  if (d.kind == "SIZE_OR_SYNTAX_MISMATCH" || d.kind == "P2P_MISMATCH")
    return "SIZE_OR_SYNTAX_MISMATCH";
  if (d.kind == "DTYPE_MISMATCH") return "COLLECTIVE_DTYPE_MISMATCH";
  // With no rank finished, every state agrees: PyTorch finds nothing, as for
  // the reduce ops and roots it does not compare.
  if (d.kind == "NOT_FINISHED")
    return d.culprits.empty() ? "FULLY_MATCHED" : "COLLECTIVE_STATE_MISMATCH";
  if (d.kind == "REDUCE_OP_MISMATCH" || d.kind == "ROOT_MISMATCH") return "FULLY_MATCHED";
  if (d.notJoined.empty() && !d.noDump.empty()) return "UNDECIDED";
  return "NOT_ALL_RANKS_JOINED";
}

AnalysisResult analyzeRankDumps(const std::vector<RankDump>& dumps) {
  if (dumps.empty()) throw ValueError("analyze: no dump files given");
  AnalysisResult result;
  std::map<int, const RankDump*> byRank;
  std::map<int, EntriesByGroup> entries;
  std::map<std::string, DumpGroup> groups;
  for (const auto& d : dumps) {
    if (!byRank.emplace(d.rank, &d).second) {
      throw ValueError(fmt::format("analyze: {} and {} are both dumps of rank {}",
                                   byRank[d.rank]->path, d.path, d.rank));
    }
    result.ranks.push_back(d.rank);
    for (const auto& [name, g] : d.groups) groups.emplace(name, g);
    EntriesByGroup& mine = entries[d.rank];  // every dump has its (maybe empty) index
    for (const auto& e : d.entries) mine[e.group].push_back(&e);
  }
  std::sort(result.ranks.begin(), result.ranks.end());
  for (const auto& [name, cfg] : groups) {
    GroupAnalysis a(cfg, byRank, entries);
    std::optional<Divergence> d = a.collectives();
    if (!d) d = a.pointToPoint();
    if (!d) continue;
    d->text += subgroupNote(cfg);
    d->matchState = torchMatchState(*d);
    result.divergences.push_back(*d);
  }
  result.text = fmt::format("Analyzed {} dump(s) (ranks {}), {} group(s).\n", dumps.size(),
                            ranksText(result.ranks), groups.size());
  if (result.divergences.empty()) {
    result.text +=
        "No divergence found: every rank agrees on every recorded operation "
        "(PyTorch's analyzer: FULLY_MATCHED).\n";
  }
  for (const auto& d : result.divergences) {
    result.text += fmt::format("{} (PyTorch's analyzer: {})\n", d.text, d.matchState);
  }
  return result;
}

AnalysisResult analyzeDumps(const std::vector<std::string>& paths) {
  std::vector<RankDump> dumps;
  for (const auto& p : paths) dumps.push_back(readAnyDumpFile(p));
  return analyzeRankDumps(dumps);
}

}  // namespace distlab::emulator
