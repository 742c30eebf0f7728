#include "runtime/comm/debug/monitored_barrier.hpp"

#include <fmt/format.h>

#include <map>
#include <mutex>

#include "runtime/comm/debug/store_exchange.hpp"
#include "runtime/comm/group_management.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/logging.hpp"

namespace distlab::comm {
namespace {

// Calls per group on this rank; keys of call n live under "dbg/mb/<group>/<n>/".
uint64_t nextBarrierIndex(const ProcessGroup& group) {
  static std::mutex mutex;
  static std::map<std::pair<const ProcessGroup*, std::string>, uint64_t> counts;
  std::lock_guard<std::mutex> lock(mutex);
  return ++counts[{&group, group.name()}];
}

[[noreturn]] void throwFor(const std::vector<MissingRank>& missing, const std::string& text) {
  for (const auto& m : missing) {
    if (m.liveness.status == RankStatus::kDead) throw DistPeerFailureError(text);
  }
  throw DistTimeoutError(text);
}

RankNames namesOf(const ProcessGroup& g) { return RankNames(g.name(), g.globalRanks()); }

std::string rootReport(const ProcessGroup& g, const std::vector<MissingRank>& missing,
                       Milliseconds timeout) {
  const RankNames names = namesOf(g);
  std::vector<int> ranks;
  for (const auto& m : missing) ranks.push_back(m.rank);
  return fmt::format("[{}]: {} failed to pass monitoredBarrier in {} ms\n{}",
                     names.name(0, true), names.names(ranks, true), timeout.count(),
                     describeMissing(missing, names));
}

void runRoot(ProcessGroup& g, const std::string& prefix, Milliseconds timeout, bool waitAll) {
  Store& store = *g.store();
  const Deadline deadline = Deadline::after(timeout);
  std::vector<MissingRank> missing;
  if (waitAll) {
    std::vector<std::string> keys;
    std::vector<int> ranks;
    for (int r = 1; r < g.size(); ++r) {
      keys.push_back(prefix + "a" + std::to_string(r));
      ranks.push_back(r);
    }
    missing = waitForRanks(store, keys, ranks, g.globalRanks(), deadline, false);
  } else {
    for (int r = 1; r < g.size() && missing.empty(); ++r) {
      missing = waitForRanks(store, {prefix + "a" + std::to_string(r)}, {r}, g.globalRanks(),
                             deadline, true);
    }
  }
  if (missing.empty()) {
    store.setString(prefix + "ack", "ok");
    return;
  }
  const std::string text = rootReport(g, missing, timeout);
  store.setString(prefix + "ack", "ERR:" + text);
  DL_LOG(ERROR, "{}", text);
  throwFor(missing, text);
}

void runPeer(ProcessGroup& g, const std::string& prefix, Milliseconds timeout) {
  Store& store = *g.store();
  store.setString(prefix + "a" + std::to_string(g.rank()), "1");
  const RankNames names = namesOf(g);
  const std::string base = fmt::format(
      "{} successfully reached monitoredBarrier, but received errors while waiting for "
      "send/recv from {}. Please check {} logs for faulty rank.",
      names.name(g.rank(), true), names.name(0), names.name(0));
  auto missing = waitForRanks(store, {prefix + "ack"}, {0}, g.globalRanks(),
                              Deadline::after(timeout + kMonitoredBarrierGrace), true);
  if (!missing.empty()) {
    throwFor(missing, fmt::format("{}\n{} did not answer within {} ms:\n{}", base,
                                  names.name(0, true),
                                  (timeout + kMonitoredBarrierGrace).count(),
                                  describeMissing(missing, names)));
  }
  const std::string ack = store.getString(prefix + "ack");
  if (ack == "ok") return;
  const std::string report = ack.substr(4);
  const std::string text = fmt::format("{}\n{} reported: {}", base, names.name(0, true), report);
  if (report.find(": dead (") != std::string::npos) throw DistPeerFailureError(text);
  throw DistTimeoutError(text);
}

}  // namespace

void monitoredBarrier(const ProcessGroupPtr& groupArg, Milliseconds timeout, bool waitAllRanks) {
  ProcessGroupPtr group = groupArg ? groupArg : defaultGroup();
  if (!group->isMember()) {
    throw ValueError(fmt::format("monitoredBarrier: this rank is not a member of group '{}'",
                                 group->name()));
  }
  if (timeout.count() <= 0) timeout = group->timeout();
  registerLiveness(group->store(), group->globalRankOf(group->rank()), group->size());
  if (group->size() == 1) return;
  const std::string prefix =
      fmt::format("dbg/mb/{}/{}/", group->name(), nextBarrierIndex(*group));
  if (group->rank() == 0) {
    runRoot(*group, prefix, timeout, waitAllRanks);
  } else {
    runPeer(*group, prefix, timeout);
  }
}

}  // namespace distlab::comm
