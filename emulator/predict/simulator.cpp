// Note [Replay] and Note [Sharing links] (simulator.hpp): an event-driven
// replay. Between two events every rate is constant, so the loop runs every
// rank that is due, starts every collective that may start, then jumps to
// the next time a rank finishes computing or a collective ends a phase.
#include "emulator/predict/simulator.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "runtime/core/errors.hpp"

namespace distlab::emulator {
namespace {

using Kind = SimAction::Kind;
constexpr double kEpsilonS = 1e-12;
constexpr double kNever = std::numeric_limits<double>::infinity();

enum class Phase { kWaiting, kLatency, kIntra, kInter, kDone };

struct Running {
  Phase phase = Phase::kWaiting;
  double remainingS = 0;  // of the current phase, at full speed
  int issued = 0;
  std::vector<int> issuers;
  std::vector<int> predecessors;  // per participant: the previous one on its stream, or -1
  std::vector<int> nodes;
};

struct RankState {
  size_t pc = 0;
  double clock = 0;
  int blockedOn = -1;
  bool finished = false;
};

void validate(const SimInput& in) {
  const int n = static_cast<int>(in.ranks.size());
  for (const auto& c : in.collectives) {
    std::set<int> seen;
    for (int r : c.ranks) {
      if (r < 0 || r >= n || !seen.insert(r).second) {
        throw ValueError(fmt::format("replay: {} names rank {} ({} ranks, each once)", c.name, r, n));
      }
    }
    if (c.ranks.empty()) throw ValueError(fmt::format("replay: {} names no rank", c.name));
  }
  for (int r = 0; r < n; ++r) {
    std::set<int> issued;
    for (const SimAction& a : in.ranks[r]) {
      if (a.kind == Kind::kCompute && (!std::isfinite(a.seconds) || a.seconds < 0)) {
        throw ValueError(fmt::format("replay: rank {} computes for {} s; give a finite time >= 0",
                                     r, a.seconds));
      }
      if (a.kind != Kind::kIssue && a.kind != Kind::kWait) continue;
      if (a.collective < 0 || a.collective >= static_cast<int>(in.collectives.size())) {
        throw ValueError(fmt::format("replay: rank {} names collective {} of {}", r, a.collective,
                                     in.collectives.size()));
      }
      const SimCollective& c = in.collectives[a.collective];
      if (std::find(c.ranks.begin(), c.ranks.end(), r) == c.ranks.end()) {
        throw ValueError(fmt::format("replay: rank {} is not part of {}", r, c.name));
      }
      if (a.kind == Kind::kIssue && !issued.insert(a.collective).second) {
        throw ValueError(fmt::format("replay: rank {} issues {} twice", r, c.name));
      }
      if (a.kind == Kind::kWait && !issued.count(a.collective)) {
        throw ValueError(fmt::format("replay: rank {} waits for {} before issuing it", r, c.name));
      }
    }
  }
}

class Replay {
 public:
  explicit Replay(const SimInput& in) : in_(in), ranks_(in.ranks.size()), colls_(in.collectives.size()) {
    result_.ranks.resize(in.ranks.size());
    result_.collectives.resize(in.collectives.size());
    std::map<std::pair<int, std::string>, int> lastOnStream;
    for (size_t c = 0; c < colls_.size(); ++c) {
      const SimCollective& sc = in.collectives[c];
      colls_[c].predecessors.assign(sc.ranks.size(), -1);
      const GroupShape shape = shapeOf(in.topology, sc.ranks);
      colls_[c].nodes = shape.nodeIds;
      const bool cross = sc.ranks.size() == 2 &&
                         in.topology.nodeOf(sc.ranks[0]) != in.topology.nodeOf(sc.ranks[1]);
      result_.collectives[c].cost =
          collectiveCostOrAuto(in.topology, sc.op, sc.bytes, shape, sc.algorithm, cross);
    }
    for (size_t r = 0; r < in.ranks.size(); ++r) {
      for (const SimAction& a : in.ranks[r]) {
        if (a.kind != Kind::kIssue) continue;
        const SimCollective& sc = in.collectives[a.collective];
        const auto key = std::make_pair(static_cast<int>(r), sc.stream);
        const auto prev = lastOnStream.find(key);
        const size_t slot = std::find(sc.ranks.begin(), sc.ranks.end(), static_cast<int>(r)) -
                            sc.ranks.begin();
        colls_[a.collective].predecessors[slot] = prev == lastOnStream.end() ? -1 : prev->second;
        lastOnStream[key] = a.collective;
      }
    }
  }

  SimResult run() {
    for (;;) {
      settle();
      const double next = nextEvent();
      if (next == kNever) break;
      advance(next);
    }
    for (size_t r = 0; r < ranks_.size(); ++r) {
      if (!ranks_[r].finished) throw Error(deadlock(static_cast<int>(r)));
      result_.endS = std::max(result_.endS, result_.ranks[r].endS);
    }
    return result_;
  }

 private:
  // Runs every rank that is due, starts what may start and finishes what has
  // no time left, until nothing changes at this instant.
  void settle() {
    bool changed = true;
    while (changed) {
      changed = false;
      for (size_t r = 0; r < ranks_.size(); ++r) changed |= runRank(static_cast<int>(r));
      for (size_t c = 0; c < colls_.size(); ++c) changed |= tryStart(static_cast<int>(c));
      for (size_t c = 0; c < colls_.size(); ++c) changed |= finishPhases(static_cast<int>(c));
    }
  }

  bool runRank(int r) {
    RankState& s = ranks_[r];
    SimRankResult& out = result_.ranks[r];
    const auto& program = in_.ranks[r];
    bool changed = false;
    while (!s.finished && s.blockedOn < 0 && s.clock <= now_ + kEpsilonS) {
      if (s.pc == program.size()) {
        s.finished = true;
        out.endS = s.clock;
        return true;
      }
      const SimAction& a = program[s.pc];
      changed = true;
      if (a.kind == Kind::kCompute) {
        if (a.seconds > 0) out.spans.push_back({s.clock, s.clock + a.seconds, -1});
        s.clock += a.seconds;
        out.computeS += a.seconds;
      } else if (a.kind == Kind::kIssue) {
        Running& c = colls_[a.collective];
        ++c.issued;
        c.issuers.push_back(r);
        SimCollectiveResult& cr = result_.collectives[a.collective];
        if (s.clock >= cr.issuedS) cr.lastIssuer = r;
        cr.issuedS = std::max(cr.issuedS, s.clock);
      } else if (a.kind == Kind::kWait) {
        if (colls_[a.collective].phase != Phase::kDone) {
          s.blockedOn = a.collective;
          return changed;
        }
        block(r, result_.collectives[a.collective].endS, a.collective);
      } else {
        out.marks[a.label].push_back(s.clock);
      }
      ++s.pc;
    }
    return changed;
  }

  void block(int r, double until, int collective) {
    RankState& s = ranks_[r];
    if (until > s.clock) {
      result_.ranks[r].spans.push_back({s.clock, until, collective});
      result_.ranks[r].blockedS += until - s.clock;
      s.clock = until;
    }
  }

  bool tryStart(int c) {
    Running& rc = colls_[c];
    const SimCollective& sc = in_.collectives[c];
    if (rc.phase != Phase::kWaiting || rc.issued < static_cast<int>(sc.ranks.size())) return false;
    for (int p : rc.predecessors) {
      if (p >= 0 && colls_[p].phase != Phase::kDone) return false;
    }
    rc.phase = Phase::kLatency;
    rc.remainingS = result_.collectives[c].cost.latencyS;
    result_.collectives[c].startS = now_;
    return true;
  }

  // Moves a collective past every phase with nothing left; at the end,
  // releases the ranks that wait for it.
  bool finishPhases(int c) {
    Running& rc = colls_[c];
    if (rc.phase == Phase::kWaiting || rc.phase == Phase::kDone) return false;
    bool changed = false;
    const CollectiveCost& cost = result_.collectives[c].cost;
    while (rc.phase != Phase::kDone && rc.remainingS <= kEpsilonS) {
      changed = true;
      if (rc.phase == Phase::kLatency) {
        rc.phase = Phase::kIntra;
        rc.remainingS = cost.intraS;
      } else if (rc.phase == Phase::kIntra) {
        rc.phase = Phase::kInter;
        rc.remainingS = cost.interS;
      } else {
        rc.phase = Phase::kDone;
        result_.collectives[c].endS = now_;
      }
    }
    if (rc.phase == Phase::kDone) {
      for (size_t r = 0; r < ranks_.size(); ++r) {
        if (ranks_[r].blockedOn != c) continue;
        ranks_[r].blockedOn = -1;
        block(static_cast<int>(r), now_, c);
        ++ranks_[r].pc;
      }
    }
    return changed;
  }

  // Note [Sharing links]: the speed of each running collective now.
  std::vector<double> rates() const {
    std::map<std::pair<Phase, int>, int> load;
    for (const Running& rc : colls_) {
      if (rc.phase != Phase::kIntra && rc.phase != Phase::kInter) continue;
      for (int node : rc.nodes) ++load[{rc.phase, node}];
    }
    std::vector<double> out(colls_.size(), 0);
    for (size_t c = 0; c < colls_.size(); ++c) {
      const Running& rc = colls_[c];
      if (rc.phase == Phase::kLatency) out[c] = 1;
      if (rc.phase != Phase::kIntra && rc.phase != Phase::kInter) continue;
      int k = 1;
      for (int node : rc.nodes) k = std::max(k, load.at({rc.phase, node}));
      out[c] = 1.0 / k;
    }
    return out;
  }

  double nextEvent() {
    double next = kNever;
    for (const RankState& s : ranks_) {
      if (!s.finished && s.blockedOn < 0 && s.clock > now_) next = std::min(next, s.clock);
    }
    rates_ = rates();
    for (size_t c = 0; c < colls_.size(); ++c) {
      if (rates_[c] > 0) next = std::min(next, now_ + colls_[c].remainingS / rates_[c]);
    }
    return next;
  }

  void advance(double to) {
    const double dt = to - now_;
    for (size_t c = 0; c < colls_.size(); ++c) colls_[c].remainingS -= dt * rates_[c];
    now_ = to;
  }

  std::string deadlock(int r) const {
    const RankState& s = ranks_[r];
    if (s.blockedOn < 0) return fmt::format("replay: rank {} stopped at action {}", r, s.pc);
    const SimCollective& c = in_.collectives[s.blockedOn];
    std::vector<int> missing;
    for (int p : c.ranks) {
      const auto& issuers = colls_[s.blockedOn].issuers;
      if (std::find(issuers.begin(), issuers.end(), p) == issuers.end()) missing.push_back(p);
    }
    return fmt::format("replay deadlock: rank {} waits for {}, which ranks [{}] issued and ranks "
                       "[{}] never did (or it waits behind another operation of its stream)",
                       r, c.name, fmt::join(colls_[s.blockedOn].issuers, ", "),
                       fmt::join(missing, ", "));
  }

  const SimInput& in_;
  std::vector<RankState> ranks_;
  std::vector<Running> colls_;
  std::vector<double> rates_;
  SimResult result_;
  double now_ = 0;
};

}  // namespace

SimResult simulate(const SimInput& input) {
  validate(input);
  return Replay(input).run();
}

}  // namespace distlab::emulator
