#include "emulator/scenario/diagnosis.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <deque>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "runtime/comm/backend.hpp"
#include "runtime/comm/debug/rank_names.hpp"
#include "runtime/core/rank_ranges.hpp"

namespace distlab::emulator {

namespace {

// "<TYPE> <peer|any> <k> <numel> <dtype> <tag>" (FaultBackend's p2p line).
P2PRecord readP2PRecord(const std::string& text) {
  P2PRecord p;
  std::istringstream in(text);
  std::string type, peer, k, numel, dtype;
  in >> type >> peer >> k >> numel >> dtype >> p.tag;
  p.id = fmt::format("{} {} {}", type, peer, k);
  p.isSend = type == "SEND";
  p.peer = peer == "any" ? -1 : std::atoi(peer.c_str());
  p.shape = numel + " " + dtype;
  return p;
}

}  // namespace

// A log holds a line per operation of a whole run (tens of thousands for a
// long training program): completions find their operation through these
// indexes, not by a scan from the start (which made reading quadratic).
RankEvents readRankEvents(const std::string& path) {
  RankEvents ev;
  std::unordered_map<uint64_t, std::deque<size_t>> opsNotDone;     // seq -> ops, in order
  std::unordered_map<std::string, std::deque<size_t>> p2pNotDone;  // id -> p2p, in order
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    int64_t us = 0;
    std::string kind;
    if (!(ls >> us >> kind)) continue;
    std::string rest;
    std::getline(ls, rest);
    if (!rest.empty() && rest[0] == ' ') rest.erase(0, 1);
    if (kind == "op") {
      OpRecord r;
      r.us = us;
      std::istringstream rs(rest);
      rs >> r.seq >> r.op;
      r.fingerprint = rest.substr(rest.find(' ') + 1);
      opsNotDone[r.seq].push_back(ev.ops.size());
      ev.ops.push_back(r);
    } else if (kind == "done") {
      std::istringstream rs(rest);
      uint64_t seq = 0;
      std::string status;
      rs >> seq >> status;
      // The first operation with this sequence number not completed yet.
      auto it = opsNotDone.find(seq);
      if (it != opsNotDone.end() && !it->second.empty()) {
        OpRecord& op = ev.ops[it->second.front()];
        it->second.pop_front();
        op.doneUs = us;
        op.failed = status != "ok";
      }
    } else if (kind == "p2p") {
      ev.p2p.push_back(readP2PRecord(rest));
      p2pNotDone[ev.p2p.back().id].push_back(ev.p2p.size() - 1);
    } else if (kind == "p2p_done") {
      const size_t status = rest.rfind(' ');
      if (status == std::string::npos) continue;
      auto it = p2pNotDone.find(rest.substr(0, status));
      if (it != p2pNotDone.end() && !it->second.empty()) {
        P2PRecord& p = ev.p2p[it->second.front()];
        it->second.pop_front();
        p.done = true;
        p.failed = rest.substr(status + 1) != "ok";
      }
    } else if (kind == "fault") {
      ev.faults.emplace_back(us, rest);
      if (ev.firstFaultUs == 0) {
        ev.firstFaultUs = us;
        ev.firstFault = rest;
      }
    } else if (kind == "step") {
      ev.steps.emplace_back(us, std::atoi(rest.c_str()));
    }
  }
  return ev;
}

namespace {

// Each rank's sends by (receiver, tag), in issue order.
using SendsByPeerAndTag = std::map<std::pair<int, int>, std::vector<const P2PRecord*>>;
SendsByPeerAndTag sendsOf(const RankEvents& events) {
  SendsByPeerAndTag sends;
  for (const auto& p : events.p2p) {
    if (p.isSend) sends[{p.peer, p.tag}].push_back(&p);
  }
  return sends;
}

// The `index`-th send (from 1) to `dst` with `tag`, or nullptr.
const P2PRecord* nthSend(const SendsByPeerAndTag& sends, int dst, int tag, int index) {
  auto it = sends.find({dst, tag});
  if (it == sends.end() || index > static_cast<int>(it->second.size())) return nullptr;
  return it->second[static_cast<size_t>(index - 1)];
}

// "rank 3", "ranks 1,5", or with runs folded, "ranks 0-776,778-1023"
// (runtime/core/rank_ranges.hpp).
std::string rankList(const std::vector<int>& ranks) {
  if (ranks.size() == 1) return fmt::format("rank {}", ranks[0]);
  return "ranks " + foldRankRuns(ranks);
}

// Whether a receive of `events` never completed or failed: the rank stopped
// there waiting for a message.
bool blockedInReceive(const RankEvents& events) {
  return std::any_of(events.p2p.begin(), events.p2p.end(),
                     [](const P2PRecord& p) { return !p.isSend && (!p.done || p.failed); });
}

// The root of a rooted collective's fingerprint ("BROADCAST 10 int64 - 0 1":
// the fifth field), or -1.
int rootOf(const std::string& fingerprint) {
  std::istringstream in(fingerprint);
  std::string op, numel, dtype, redop;
  int root = -1;
  if (!(in >> op >> numel >> dtype >> redop >> root)) return -1;
  return root;
}

// With a tie between fingerprints, a rooted collective still has a reference:
// the root's. The ranks that disagree with it, or all disagreeing ranks when
// the root is not among them.
std::vector<int> tieCulprits(const std::map<std::string, std::vector<int>>& byPrint) {
  std::vector<int> all, offRoot;
  for (const auto& [print, ranks] : byPrint) {
    all.insert(all.end(), ranks.begin(), ranks.end());
    const bool rootHere = std::find(ranks.begin(), ranks.end(), rootOf(print)) != ranks.end();
    if (!rootHere) continue;
    for (const auto& [other, otherRanks] : byPrint) {
      if (other != print) offRoot.insert(offRoot.end(), otherRanks.begin(), otherRanks.end());
    }
  }
  return offRoot.empty() ? all : offRoot;
}

// Rule 2: the first sequence number where the ranks disagree.
// A rank that already failed (errorUs, 0: never) when the others issued a
// collective is not "missing" from it: it stopped, it did not desync. Nor is
// one whose call the group refused after a peer's failure (`refused`: its
// error is the group's refusal of new work, not after a timeout): it issued
// the call, which its log, written below the group, never saw. (A one-sided
// broadcast lets a reader find a mismatch before a third rank issued it.)
bool desync(const std::vector<RankEvents>& events, const std::vector<bool>& alive,
            const std::vector<int64_t>& errorUs, const std::vector<bool>& refused,
            std::vector<int>& culprits, std::string& text) {
  const int n = static_cast<int>(events.size());
  // Each rank's operations by sequence number, in issue order: one pass over
  // the logs, not one per sequence number.
  std::vector<std::unordered_map<uint64_t, std::vector<const OpRecord*>>> bySeq(n);
  std::vector<bool> inReceive(n);
  uint64_t maxSeq = 0;
  for (int r = 0; r < n; ++r) {
    for (const auto& op : events[r].ops) {
      bySeq[r][op.seq].push_back(&op);
      maxSeq = std::max(maxSeq, op.seq);
    }
    inReceive[r] = blockedInReceive(events[r]);
  }
  const std::vector<const OpRecord*> none;
  for (uint64_t seq = 1; seq <= maxSeq; ++seq) {
    std::map<std::string, std::vector<int>> byPrint;
    std::vector<int> missing, doubled;
    std::vector<const std::vector<const OpRecord*>*> issued(n, &none);
    int64_t firstIssueUs = 0;
    for (int r = 0; r < n; ++r) {
      auto it = bySeq[r].find(seq);
      if (it == bySeq[r].end()) continue;
      issued[r] = &it->second;
      for (const OpRecord* op : it->second) {
        if (firstIssueUs == 0 || op->us < firstIssueUs) firstIssueUs = op->us;
      }
    }
    for (int r = 0; r < n; ++r) {
      const std::vector<const OpRecord*>& mine = *issued[r];
      if (mine.empty()) {
        bool stoppedBefore = (errorUs[r] > 0 && errorUs[r] <= firstIssueUs) || refused[r];
        // Blocked in a receive, it waits for a message (rule 2b judges that).
        if (alive[r] && !stoppedBefore && !inReceive[r]) missing.push_back(r);
        continue;
      }
      if (mine.size() > 1) doubled.push_back(r);
      byPrint[mine.back()->fingerprint].push_back(r);
    }
    std::string what = byPrint.empty() ? "?" : byPrint.begin()->first.substr(
                                                   0, byPrint.begin()->first.find(' '));
    if (!doubled.empty()) {
      culprits = doubled;
      text = fmt::format("{} issued an extra collective at seq {}", rankList(doubled), seq);
      return true;
    }
    if (!missing.empty() && !byPrint.empty()) {
      std::vector<int> waiting;
      for (const auto& [p, rs] : byPrint) waiting.insert(waiting.end(), rs.begin(), rs.end());
      std::sort(waiting.begin(), waiting.end());
      culprits = missing;
      text = fmt::format("{} never issued seq {} ({}); {} waited for it", rankList(missing), seq,
                         what, rankList(waiting));
      return true;
    }
    if (byPrint.size() > 1) {
      size_t best = 0;
      for (const auto& [p, rs] : byPrint) best = std::max(best, rs.size());
      int bestGroups = 0;
      for (const auto& [p, rs] : byPrint) bestGroups += rs.size() == best ? 1 : 0;
      std::vector<std::string> parts;
      culprits.clear();
      for (const auto& [p, rs] : byPrint) {
        parts.push_back(fmt::format("{}: {}", rankList(rs), p));
        if (rs.size() < best) culprits.insert(culprits.end(), rs.begin(), rs.end());
      }
      if (bestGroups > 1) culprits = tieCulprits(byPrint);
      std::sort(culprits.begin(), culprits.end());
      culprits.erase(std::unique(culprits.begin(), culprits.end()), culprits.end());
      text = fmt::format("collectives differ at seq {}: {}", seq, fmt::join(parts, " vs "));
      return true;
    }
  }
  return false;
}

// Rule 2b: point-to-point messages, matched in order per (sender, receiver,
// tag). A receive from any source matches nothing here (its sender is not
// known from the log alone).
bool unmatchedMessage(const std::vector<RankEvents>& events, std::vector<int>& culprits,
                      std::string& text) {
  const int n = static_cast<int>(events.size());
  std::vector<SendsByPeerAndTag> sends;
  for (const auto& e : events) sends.push_back(sendsOf(e));
  for (int dst = 0; dst < n; ++dst) {
    std::map<std::pair<int, int>, int> received;  // (src, tag) -> receives so far
    for (const auto& recv : events[dst].p2p) {
      if (recv.isSend || recv.peer < 0 || recv.peer >= n) continue;
      const int src = recv.peer;
      const int index = ++received[{src, recv.tag}];
      const P2PRecord* send = nthSend(sends[src], dst, recv.tag, index);
      if (!send && (recv.failed || !recv.done)) {
        culprits = {src};
        text = fmt::format("rank {} never sent message {} to rank {} (tag {}); rank {}'s recv "
                           "waited for it", src, index, dst, recv.tag, dst);
        return true;
      }
      if (send && send->shape != recv.shape) {
        culprits = {std::min(src, dst), std::max(src, dst)};
        text = fmt::format("message {} from rank {} to rank {} (tag {}) differs: sent {}, "
                           "received into {}", index, src, dst, recv.tag, send->shape,
                           recv.shape);
        return true;
      }
    }
  }
  return false;
}

// Rule 3: parameter checksums.
bool checksumSplit(const std::vector<std::optional<RankResult>>& results,
                   std::vector<int>& culprits, std::string& text) {
  std::map<std::string, std::vector<int>> groups;
  for (const auto& r : results) {
    if (r && !r->paramChecksum.empty()) groups[r->paramChecksum].push_back(r->rank);
  }
  if (groups.size() <= 1) return false;
  size_t best = 0;
  for (const auto& [c, rs] : groups) best = std::max(best, rs.size());
  int bestGroups = 0;
  for (const auto& [c, rs] : groups) bestGroups += rs.size() == best ? 1 : 0;
  for (const auto& [c, rs] : groups) {
    if (rs.size() < best || bestGroups > 1) culprits.insert(culprits.end(), rs.begin(), rs.end());
  }
  std::sort(culprits.begin(), culprits.end());
  text = fmt::format("parameters diverged: {} hold{} different parameters than the others",
                     rankList(culprits), culprits.size() == 1 ? "s" : "");
  return true;
}

// Rule 3a: the rank that went non-finite first (its note is added apart).
bool nonFiniteCulprit(const std::vector<std::optional<RankResult>>& results,
                      std::vector<int>& culprits) {
  auto first = firstNonFinite(results);
  if (first) culprits = {first->first};
  return first.has_value();
}

// Rule 4: the largest lag in issuing one collective.
bool straggler(const std::vector<RankEvents>& events, std::vector<int>& culprits,
               std::string& text) {
  int64_t worst = 0;
  int who = -1;
  uint64_t where = 0;
  std::map<uint64_t, std::vector<std::pair<int64_t, int>>> bySeq;
  for (int r = 0; r < static_cast<int>(events.size()); ++r) {
    for (const auto& op : events[r].ops) bySeq[op.seq].emplace_back(op.us, r);
  }
  for (auto& [seq, v] : bySeq) {
    if (v.size() < 2) continue;
    std::sort(v.begin(), v.end());
    int64_t lag = v.back().first - v[v.size() - 2].first;
    if (lag > worst) {
      worst = lag;
      who = v.back().second;
      where = seq;
    }
  }
  if (worst < 50000) return false;
  culprits = {who};
  text = fmt::format("rank {} is a straggler: it issued seq {} {:.0f} ms after the others", who,
                     where, worst / 1000.0);
  return true;
}

}  // namespace

Diagnosis diagnose(const Scenario& s, const std::vector<RankExit>& exits,
                   const std::vector<std::optional<RankResult>>& results,
                   const std::vector<RankEvents>& events, int64_t analysisUs) {
  Diagnosis d;
  const int n = static_cast<int>(exits.size());
  std::vector<std::string> notes;
  std::vector<int> crashed;
  std::vector<bool> alive(n, true);
  int64_t firstErrorUs = 0, firstCrashUs = 0;
  std::string firstErrorType, firstErrorText;
  bool hang = false, anyFailure = false;
  for (int r = 0; r < n; ++r) {
    const auto& e = exits[r];
    const auto& res = results[r];
    if (e.killedBy == "deadline") hang = true;
    if (!e.ok()) anyFailure = true;
    if (res && res->status == "error") {
      if (firstErrorUs == 0 || res->errorUs < firstErrorUs) {
        firstErrorUs = res->errorUs;
        firstErrorType = res->errorType;
        firstErrorText = fmt::format("rank {}: {}: {}", r, res->errorType, res->message);
      }
    } else if (!e.ok() && e.killedBy.empty()) {
      crashed.push_back(r);
      alive[r] = false;
      if (firstCrashUs == 0 || e.endUs < firstCrashUs) firstCrashUs = e.endUs;
      std::string how = e.signal ? fmt::format("killed by {}", signalName(e.signal))
                                 : fmt::format("exited with code {}", e.exitCode);
      std::string where = events[r].firstFault.empty() ? "" : " (" + events[r].firstFault + ")";
      notes.push_back(fmt::format("rank {} {}{}", r, how, where));
    }
  }
  if (!anyFailure) {
    d.outcome = Outcome::kSuccess;
  } else if (firstErrorUs == 0 && hang) {
    d.outcome = Outcome::kHang;
  } else {
    d.outcome = firstErrorType == "DistTimeoutError" ? Outcome::kTimeout : Outcome::kError;
  }
  std::vector<int64_t> errorUs(n, 0);
  std::vector<bool> refused(n, false);
  for (int r = 0; r < n; ++r) {
    if (!results[r] || results[r]->status != "error") continue;
    errorUs[r] = results[r]->errorUs;
    // Not a refusal after a timeout: a rank that hung past it and then
    // issued its call is refused too, and is the culprit (it never issued the
    // call in time).
    refused[r] = results[r]->errorType != "DistTimeoutError" &&
                 results[r]->message.find(comm::kRefusesNewWork) != std::string::npos;
  }
  // Ranks that failed with a local (non-distributed) error: their own logic
  // stopped them (e.g. DDP's reduction check), the others merely waited.
  std::vector<int> local;
  for (int r = 0; r < n; ++r) {
    const auto& res = results[r];
    if (res && res->status == "error" && res->errorType.rfind("Dist", 0) != 0) local.push_back(r);
  }
  // The debug layer (TORCH_DISTRIBUTED_DEBUG=DETAIL) names culprits itself:
  // "... Culprit rank(s): 1 (the other ranks ... agree)", in a subgroup
  // "Culprit rank(s): 1 of group 'g1' (global rank 3) ..." (Note [Naming
  // ranks]); the runner reports global ranks.
  std::vector<int> named;
  for (const auto& res : results) {
    if (!res || res->status != "error") continue;
    for (int q : comm::parseCulpritRanks(res->message)) {
      if (std::find(named.begin(), named.end(), q) == named.end()) named.push_back(q);
    }
  }
  std::sort(named.begin(), named.end());
  std::string cause;
  if (!crashed.empty()) {
    d.culprits = crashed;
  } else if (!named.empty()) {
    d.culprits = named;
    cause = fmt::format("the debug layer names {}", rankList(named));
  } else if (!local.empty()) {
    d.culprits = local;
    cause = fmt::format("{} failed on {} own (a local error, not a distributed one)",
                        rankList(local), local.size() == 1 ? "its" : "their");
  } else if (!desync(events, alive, errorUs, refused, d.culprits, cause) &&
             !unmatchedMessage(events, d.culprits, cause) &&
             !nonFiniteCulprit(results, d.culprits) &&
             !checksumSplit(results, d.culprits, cause)) {
    straggler(events, d.culprits, cause);
  }
  if (!cause.empty()) notes.push_back(cause);
  if (auto nonFinite = firstNonFinite(results)) notes.push_back(nonFinite->second);
  if (!firstErrorText.empty()) notes.push_back("first error " + firstErrorText);
  if (hang) notes.push_back(fmt::format("no rank reported an error within run_timeout {} s: "
                                        "ranks killed", s.runTimeoutS));
  d.text = fmt::format("{}", fmt::join(notes, "; "));
  for (const auto& e : events) {
    if (e.firstFaultUs > 0 && (d.faultUs == 0 || e.firstFaultUs < d.faultUs)) {
      d.faultUs = e.firstFaultUs;
    }
  }
  if (d.faultUs > 0) {
    int64_t detected = firstErrorUs > 0 ? firstErrorUs : firstCrashUs > 0 ? firstCrashUs
                                                                          : analysisUs;
    d.detectionS = std::max<int64_t>(0, detected - d.faultUs) / 1e6;
  }
  return d;
}

}  // namespace distlab::emulator
