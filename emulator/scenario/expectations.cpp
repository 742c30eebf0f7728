#include "emulator/scenario/expectations.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

namespace distlab::emulator {

bool errorTypeIsA(const std::string& observed, const std::string& expected) {
  static const std::map<std::string, std::string> parent = {
      {"ValueError", "Error"},
      {"DistError", "Error"},
      {"DistBackendError", "DistError"},
      {"DistNetworkError", "DistError"},
      {"DistStoreError", "DistError"},
      {"DistTimeoutError", "DistBackendError"},
      {"DistPeerFailureError", "DistNetworkError"}};
  for (std::string t = observed; !t.empty();) {
    if (t == expected) return true;
    auto it = parent.find(t);
    t = it == parent.end() ? "" : it->second;
  }
  return false;
}

namespace {

void checkError(const std::string& where, int rank, const std::optional<RankResult>& res,
                const std::string& type, const std::vector<std::string>& message,
                std::vector<std::string>& out) {
  if (!res || res->status != "error") {
    out.push_back(fmt::format("{}: expected rank {} to report {}, but it reported no error",
                              where, rank, type.empty() ? "an error" : type));
    return;
  }
  if (!type.empty() && !errorTypeIsA(res->errorType, type)) {
    out.push_back(fmt::format("{}: expected {} on rank {}, observed {}: {}", where, type, rank,
                              res->errorType, res->message));
  }
  for (const auto& m : message) {
    if (res->message.find(m) == std::string::npos) {
      out.push_back(fmt::format("{}: rank {}'s error does not mention \"{}\": {}", where, rank, m,
                                res->message));
    }
  }
}

void checkRank(const RankExpectation& re, int rank, const RankExit& e,
               const std::optional<RankResult>& res, std::vector<std::string>& out) {
  std::string where = re.pos.str();
  if (re.status == "ok" && !e.ok()) {
    out.push_back(fmt::format("{}: expected rank {} to succeed, it did not", where, rank));
  }
  if (re.status == "error" || !re.error.empty() || !re.message.empty()) {
    checkError(where, rank, res, re.error, re.message, out);
  }
  if (re.status == "crashed") {
    bool crashed = !e.ok() && e.killedBy.empty() && !(res && res->status == "error");
    if (!crashed) out.push_back(fmt::format("{}: expected rank {} to crash", where, rank));
  }
  if (re.exitCode >= 0 && e.exitCode != re.exitCode) {
    out.push_back(fmt::format("{}: expected rank {} to exit with code {}, observed {}", where,
                              rank, re.exitCode,
                              e.signal ? signalName(e.signal) : std::to_string(e.exitCode)));
  }
  if (!re.signal.empty() && signalName(e.signal) != re.signal) {
    out.push_back(fmt::format("{}: expected rank {} to die by {}, observed {}", where, rank,
                              re.signal, e.signal ? signalName(e.signal)
                                                  : "exit code " + std::to_string(e.exitCode)));
  }
}

void checkTraining(const Scenario& s, const Expectation& x,
                   const std::vector<std::optional<RankResult>>& results,
                   std::vector<std::string>& out) {
  std::string where = x.pos.str();
  std::vector<std::string> sums;
  for (const auto& r : results) if (r) sums.push_back(r->paramChecksum);
  bool allEqual = std::all_of(sums.begin(), sums.end(), [&](const auto& c) { return c == sums[0]; });
  if (x.paramsEqualAcrossRanks && !allEqual) {
    out.push_back(fmt::format("{}: expected equal parameters on every rank, checksums {}", where,
                              fmt::join(sums, " ")));
  }
  if (x.paramsDifferAcrossRanks && allEqual) {
    out.push_back(fmt::format("{}: expected the parameters to differ across ranks", where));
  }
  if (x.paramsMatchReference) {
    const auto& r0 = results.empty() ? std::nullopt : results[0];
    if (!r0 || !r0->referenceChecked) {
      out.push_back(fmt::format("{}: rank 0 did not compare against the reference", where));
    } else if (!r0->referenceWithinBound) {
      out.push_back(fmt::format("{}: training differs from the single-process reference "
                                "({:.3g} x the rounding bound): {}", where,
                                r0->referenceWorstRatio, r0->referenceDetail));
    }
  }
  if (x.lossDecreased) {
    for (const auto& r : results) {
      if (!r || r->losses.size() < 2) continue;
      // Batches differ from step to step, so compare the mean of the first and
      // the last quarter of the steps rather than two single noisy values.
      size_t k = std::max<size_t>(1, r->losses.size() / 4);
      double first = 0, last = 0;
      for (size_t i = 0; i < k; ++i) {
        first += r->losses[i] / k;
        last += r->losses[r->losses.size() - 1 - i] / k;
      }
      if (!(last < first)) {
        out.push_back(fmt::format("{}: loss did not decrease on rank {}: mean of the first {} "
                                  "steps {:g}, of the last {} steps {:g}", where, r->rank, k,
                                  first, k, last));
      }
    }
  }
  (void)s;
}

}  // namespace

std::vector<std::string> checkExpectations(const Scenario& s, const Diagnosis& d,
                                           const std::vector<RankExit>& exits,
                                           const std::vector<std::optional<RankResult>>& results) {
  std::vector<std::string> out;
  const Expectation& x = s.expect;
  std::string where = x.pos.str();
  if (d.outcome != x.outcome) {
    out.push_back(fmt::format("{}: expected outcome {}, observed {}{}", where,
                              outcomeName(x.outcome), outcomeName(d.outcome),
                              d.text.empty() ? "" : " (" + d.text + ")"));
  }
  if (!x.error.empty() || !x.message.empty()) {
    std::vector<int> ranks;
    if (x.errorRanks) {
      ranks = *x.errorRanks;
    } else {
      for (const auto& r : results) if (r && r->status == "error") ranks.push_back(r->rank);
      if (ranks.empty()) out.push_back(fmt::format("{}: expected {} but no rank reported an "
                                                   "error", where, x.error.empty() ? "an error"
                                                                                   : x.error));
    }
    for (int r : ranks) checkError(where, r, results[r], x.error, x.message, out);
  }
  if (x.culprits && *x.culprits != d.culprits) {
    out.push_back(fmt::format("{}: expected culprits [{}], diagnosed [{}] ({})", where,
                              fmt::join(*x.culprits, ","), fmt::join(d.culprits, ","), d.text));
  }
  for (const auto& m : x.diagnosis) {
    if (d.text.find(m) == std::string::npos) {
      out.push_back(fmt::format("{}: the diagnosis does not mention \"{}\": {}", where, m, d.text));
    }
  }
  if (x.detectWithinS > 0) {
    if (!d.detectionS) {
      out.push_back(fmt::format("{}: no fault fired, so nothing was detected", where));
    } else if (*d.detectionS > x.detectWithinS) {
      out.push_back(fmt::format("{}: detected after {:.2f} s, expected within {:g} s", where,
                                *d.detectionS, x.detectWithinS));
    }
  }
  for (const auto& [rank, re] : x.perRank) checkRank(re, rank, exits[rank], results[rank], out);
  if (s.workloadKind == "training") checkTraining(s, x, results, out);
  return out;
}

}  // namespace distlab::emulator
