#include "runtime/comm/debug/rank_names.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <optional>

namespace distlab::comm {
namespace {

constexpr std::string_view kCulpritTag = "Culprit rank(s): ";
constexpr std::string_view kBarrierVerdict = " failed to pass monitoredBarrier";
constexpr std::string_view kMismatchTag = "Detected mismatch between collectives on ranks. ";
constexpr std::string_view kRunning = " is running collective: ";

// Reads "1, 2, 3" from the front of `text`; advances `text` past it.
std::vector<int> readIntList(std::string_view& text) {
  std::vector<int> out;
  while (!text.empty() && std::isdigit(static_cast<unsigned char>(text.front()))) {
    int v = 0;
    while (!text.empty() && std::isdigit(static_cast<unsigned char>(text.front()))) {
      v = v * 10 + (text.front() - '0');
      text.remove_prefix(1);
    }
    out.push_back(v);
    if (text.rfind(", ", 0) != 0 || text.size() < 3 ||
        !std::isdigit(static_cast<unsigned char>(text[2]))) {
      break;
    }
    text.remove_prefix(2);
  }
  return out;
}

}  // namespace

RankNames::RankNames(std::string groupName, std::vector<int> globalRanks, int size)
    : groupName_(std::move(groupName)), globalRanks_(std::move(globalRanks)) {
  if (globalRanks_.empty()) {
    for (int r = 0; r < size; ++r) globalRanks_.push_back(r);
  }
}

int RankNames::global(int groupRank) const {
  if (groupRank < 0 || groupRank >= static_cast<int>(globalRanks_.size())) return groupRank;
  return globalRanks_[groupRank];
}

std::string RankNames::name(int groupRank, bool capital) const {
  return names({groupRank}, capital);
}

std::string RankNames::names(const std::vector<int>& groupRanks, bool capital) const {
  const char* word = groupRanks.size() == 1 ? (capital ? "Rank" : "rank")
                                            : (capital ? "Ranks" : "ranks");
  return fmt::format("{} {}", word, list(groupRanks));
}

std::string RankNames::list(const std::vector<int>& groupRanks) const {
  const bool annotate =
      std::any_of(groupRanks.begin(), groupRanks.end(), [&](int r) { return differs(r); });
  std::string out = fmt::format("{}", fmt::join(groupRanks, ", "));
  if (!annotate) return out;
  std::vector<int> globals;
  for (int r : groupRanks) globals.push_back(global(r));
  return fmt::format("{} of group '{}' (global {} {})", out, groupName_,
                     globals.size() == 1 ? "rank" : "ranks", fmt::join(globals, ", "));
}

namespace {

// The global ranks of a RankNames::list() text at the start of `rest`
// ("1, 2" or "1 of group 'g1' (global rank 3)").
std::vector<int> readNamedRanks(std::string_view rest) {
  std::vector<int> ranks = readIntList(rest);
  if (ranks.empty() || rest.rfind(" of group '", 0) != 0) return ranks;
  const auto open = rest.find("' (global rank");
  if (open == std::string_view::npos) return ranks;
  rest.remove_prefix(open + std::string_view("' (global rank").size());
  if (rest.rfind("s", 0) == 0) rest.remove_prefix(1);
  if (rest.rfind(" ", 0) != 0) return ranks;
  rest.remove_prefix(1);
  std::vector<int> globals = readIntList(rest);
  return globals.size() == ranks.size() ? globals : ranks;
}

// "[Rank 0]: Ranks 1, 2 failed to pass monitoredBarrier in 1500 ms": the
// ranks the verdict names (monitored_barrier.hpp).
std::vector<int> parseMonitoredBarrierRanks(std::string_view message) {
  const auto at = message.find(kBarrierVerdict);
  if (at == std::string_view::npos) return {};
  const auto start = message.rfind("]: ", at);
  if (start == std::string_view::npos) return {};
  std::string_view subject = message.substr(start + 3, at - start - 3);
  for (std::string_view word : {"Ranks ", "Rank "}) {
    if (subject.rfind(word, 0) == 0) return readNamedRanks(subject.substr(word.size()));
  }
  return {};
}

// The global rank of a RankNames::name(r, true) text ("Rank 1" or "Rank 1 of
// group 'g1' (global rank 3)"); nullopt for anything else.
std::optional<int> readNamedRank(std::string_view name) {
  if (name.rfind("Rank ", 0) != 0) return std::nullopt;
  std::vector<int> ranks = readNamedRanks(name.substr(5));
  if (ranks.size() != 1) return std::nullopt;
  return ranks.front();
}

// "Detected mismatch between collectives on ranks. Rank 0 is running
// collective: ..., but Rank 1 is running collective: ...": the two ranks,
// both suspects when the DETAIL check found no majority to name a culprit.
std::vector<int> parseMismatchedPair(std::string_view message) {
  const auto at = message.find(kMismatchTag);
  if (at == std::string_view::npos) return {};
  std::string_view rest = message.substr(at + kMismatchTag.size());
  const auto firstEnd = rest.find(kRunning);
  const auto but = rest.find(", but ", firstEnd);
  if (firstEnd == std::string_view::npos || but == std::string_view::npos) return {};
  std::string_view second = rest.substr(but + 6);
  const auto secondEnd = second.find(kRunning);
  if (secondEnd == std::string_view::npos) return {};
  auto a = readNamedRank(rest.substr(0, firstEnd));
  auto b = readNamedRank(second.substr(0, secondEnd));
  if (!a || !b) return {};
  return {std::min(*a, *b), std::max(*a, *b)};
}

}  // namespace

std::vector<int> parseCulpritRanks(std::string_view message) {
  const auto at = message.find(kCulpritTag);
  if (at != std::string_view::npos) {
    return readNamedRanks(message.substr(at + kCulpritTag.size()));
  }
  std::vector<int> verdict = parseMonitoredBarrierRanks(message);
  return verdict.empty() ? parseMismatchedPair(message) : verdict;
}

}  // namespace distlab::comm
