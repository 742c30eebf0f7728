#include "emulator/scenario/expectations.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <regex>
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
    // The same batch before and after training (Note [Loss on one batch] in
    // emulator/workloads/training_workload.cpp): two different batches' losses
    // say nothing about training.
    for (const auto& r : results) {
      if (!r) continue;
      if (!(r->probeLossAfter < r->probeLossBefore)) {
        out.push_back(fmt::format("{}: loss did not decrease on rank {}: on the probe batch "
                                  "{:g} before training, {:g} after",
                                  where, r->rank, r->probeLossBefore, r->probeLossAfter));
      }
    }
  }
  (void)s;
}

void checkReport(const ReportExpectation& x, const std::vector<std::optional<RankResult>>& results,
                 std::vector<std::string>& out) {
  const std::string where = x.pos.str();
  std::vector<int> ranks = x.ranks;
  if (ranks.empty()) {
    for (int r = 0; r < static_cast<int>(results.size()); ++r) ranks.push_back(r);
  }
  const std::vector<double>* first = nullptr;
  int firstRank = -1;
  bool someDiffer = false;
  for (int r : ranks) {
    const auto& res = results[static_cast<size_t>(r)];
    const std::vector<double>* series = nullptr;
    if (res) {
      auto it = res->reported.find(x.name);
      if (it != res->reported.end() && !it->second.empty()) series = &it->second;
    }
    if (!series) {
      out.push_back(fmt::format("{}: rank {} reported no '{}'", where, r, x.name));
      continue;
    }
    const std::vector<double>& v = *series;
    for (size_t i = 0; i < v.size(); ++i) {
      if ((x.min && !(v[i] >= *x.min)) || (x.max && !(v[i] <= *x.max))) {
        out.push_back(fmt::format("{}: rank {}'s '{}' #{} = {:g} is outside [{:g}, {:g}]", where,
                                  r, x.name, i, v[i], x.min.value_or(-INFINITY),
                                  x.max.value_or(INFINITY)));
        break;
      }
    }
    if (x.decreased && !(v.size() >= 2 && v.back() < v.front())) {
      out.push_back(fmt::format("{}: rank {}'s '{}' did not decrease: first {:g}, last {:g} "
                                "({} values)", where, r, x.name, v.front(), v.back(), v.size()));
    }
    if (!first) {
      first = &v;
      firstRank = r;
      continue;
    }
    // Bitwise: a NaN in both series is the same value here.
    const bool same = v.size() == first->size() &&
                      std::memcmp(v.data(), first->data(), v.size() * sizeof(double)) == 0;
    someDiffer = someDiffer || !same;
    if (x.equalAcrossRanks && !same) {
      out.push_back(fmt::format("{}: '{}' differs between rank {} and rank {} ({} vs {} values; "
                                "last {:.17g} vs {:.17g})", where, x.name, firstRank, r,
                                first->size(), v.size(), first->back(), v.back()));
    }
  }
  if (x.differAcrossRanks && first && !someDiffer) {
    out.push_back(fmt::format("{}: '{}' is the same on every rank checked; expected some rank to "
                              "differ", where, x.name));
  }
}

}  // namespace

std::vector<std::string> checkRankOutputs(const Scenario& s, const std::string& logDir) {
  constexpr size_t kSearchedPerLine = 64 * 1024;
  std::vector<std::string> out;
  for (const auto& [rank, re] : s.expect.perRank) {
    if (re.output.empty()) continue;
    std::vector<std::regex> patterns(re.output.begin(), re.output.end());
    std::vector<bool> found(patterns.size(), false);
    std::ifstream log(fmt::format("{}/rank{}.log", logDir, rank));
    std::string line;
    while (std::getline(log, line)) {
      if (line.size() > kSearchedPerLine) line.resize(kSearchedPerLine);
      for (size_t i = 0; i < patterns.size(); ++i) {
        if (!found[i] && std::regex_search(line, patterns[i])) found[i] = true;
      }
    }
    for (size_t i = 0; i < patterns.size(); ++i) {
      if (!found[i]) {
        out.push_back(fmt::format("{}: no line of rank {}'s output matches '{}'", re.pos.str(),
                                  rank, re.output[i]));
      }
    }
  }
  return out;
}

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
  for (const auto& report : x.reports) checkReport(report, results, out);
  return out;
}

}  // namespace distlab::emulator
