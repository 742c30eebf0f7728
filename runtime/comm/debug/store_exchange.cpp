#include "runtime/comm/debug/store_exchange.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "runtime/core/errors.hpp"

namespace distlab::comm {

bool ExchangeResult::anyDead() const {
  return peerDied || std::any_of(missing.begin(), missing.end(), [](const MissingRank& m) {
    return m.liveness.status == RankStatus::kDead;
  });
}

std::vector<MissingRank> waitForRanks(Store& store, const std::vector<std::string>& keys,
                                      const std::vector<int>& ranks,
                                      const std::vector<int>& globalRanks, Deadline deadline,
                                      bool failFastOnDeath) {
  std::vector<std::string> pending = keys;
  std::vector<int> owners = ranks;
  while (true) {
    const auto slice = std::min(kProbeInterval, deadline.remaining());
    try {
      store.wait(pending, std::max(slice, std::chrono::milliseconds(1)));
      return {};
    } catch (const DistStoreError&) {
      // Fall through: find who is missing.
    }
    // Liveness first, the key second: a rank that wrote its key and then died
    // (rank 0 answering a monitored barrier, then exiting) is seen as having
    // answered, never as dead -- probing after the check would race its exit.
    std::vector<std::string> stillKeys;
    std::vector<int> stillOwners;
    std::vector<MissingRank> missing;
    bool dead = false;
    for (size_t i = 0; i < pending.size(); ++i) {
      const RankLiveness liveness = probeRank(store, globalRanks.at(owners[i]));
      bool present = false;
      try {
        present = store.check({pending[i]});
      } catch (const std::exception&) {
      }
      if (present) continue;
      stillKeys.push_back(pending[i]);
      stillOwners.push_back(owners[i]);
      missing.push_back({owners[i], liveness});
      dead |= liveness.status == RankStatus::kDead;
    }
    if (missing.empty()) return {};
    if ((dead && failFastOnDeath) || deadline.expired()) return missing;
    pending = std::move(stillKeys);
    owners = std::move(stillOwners);
  }
}

ExchangeResult exchangeValues(Store& store, const ExchangeSpec& spec, const std::string& mine,
                              Deadline deadline) {
  const int n = static_cast<int>(spec.globalRanks.size());
  store.setString(spec.prefix + std::to_string(spec.rank), mine);
  std::vector<std::string> keys;
  std::vector<int> ranks;
  for (int r = 0; r < n; ++r) {
    if (r == spec.rank) continue;
    keys.push_back(spec.prefix + std::to_string(r));
    ranks.push_back(r);
  }
  ExchangeResult result;
  result.values.assign(n, "");
  result.missing =
      waitForRanks(store, keys, ranks, spec.globalRanks, deadline, spec.failFastOnDeath);
  if (!result.complete()) return result;
  std::vector<Bytes> values = keys.empty() ? std::vector<Bytes>{} : store.multiGet(keys);
  for (size_t i = 0; i < keys.size(); ++i) {
    result.values[ranks[i]] = std::string(values[i].begin(), values[i].end());
  }
  result.values[spec.rank] = mine;
  return result;
}

std::string describeMissing(const std::vector<MissingRank>& missing, const RankNames& names) {
  std::string out;
  for (const auto& m : missing) {
    if (!out.empty()) out += "\n";
    out += fmt::format("  {}: {}", names.name(m.rank), m.liveness.detail);
  }
  return out;
}

}  // namespace distlab::comm
