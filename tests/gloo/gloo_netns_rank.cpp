// One rank of the multi-host job (netns_multihost_test.sh): joins the job from
// the launcher's environment (env://: RANK, WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT), builds a Gloo process group and runs the collective suite's
// cases (tests/comm/collective_cases.hpp) over a deterministic sweep: every case
// kind x every dtype x every ReduceOp defined on it, with varied shapes, roots
// and uneven sizes, plus the suite's identity checks. Every rank generates the
// same sweep from the same seed. Exits 0 when every case checked out; prints the
// first failure and exits 1 otherwise.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <random>

#include "runtime/comm/process_group.hpp"
#include "runtime/comm/reduce_kernels.hpp"
#include "runtime/comm/store/rendezvous.hpp"
#include "tests/comm/collective_cases.hpp"
#include "tests/comm/comm_test_util.hpp"

namespace distlab::testing {
namespace {

std::vector<OpCase> sweep(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  std::vector<OpCase> cases;
  for (int k = 0; k < static_cast<int>(CaseKind::kCount); ++k) {
    for (DType dtype : allDtypes()) {
      for (auto op : allReduceOps()) {
        if (!comm::isReduceOpSupported(comm::ReduceOp(op), dtype)) continue;
        OpCase c;
        c.kind = static_cast<CaseKind>(k);
        c.dtype = dtype;
        c.reduceOp = op;
        c.root = static_cast<int>(pick(0, n - 1));
        const int64_t form = pick(0, 2);
        if (form == 0) c.shape = {pick(0, 3000)};
        if (form == 1) c.shape = {pick(1, 8), pick(1, 40)};
        if (form == 2) c.shape = {};
        for (int i = 0; i < n * n; ++i) c.sizes.push_back(pick(0, 700));
        if (c.kind == CaseKind::kAlltoallSingle) {
          for (auto& s : c.sizes) s %= 9;
          if (c.shape.empty() || c.shape.size() > 1) c.shape = {3};
          if (c.shape[0] > 64) c.shape = {3};
        }
        c.stacked = pick(0, 1) == 1;
        c.seed = static_cast<uint64_t>(pick(1, 1000000));
        cases.push_back(c);
      }
    }
  }
  return cases;
}

int runRank() {
  comm::RendezvousOptions ro;
  ro.initMethod = "env://";
  ro.timeout = std::chrono::seconds(120);
  comm::RendezvousResult rv = comm::rendezvous(ro);
  comm::ProcessGroupConfig config;
  config.store = rv.store;
  config.rank = rv.rank;
  config.size = rv.worldSize;
  config.name = "netns";
  config.timeout = std::chrono::seconds(60);
  config.backendSpec = "gloo";
  auto group = comm::createProcessGroup(config);
  const auto cases = sweep(rv.worldSize, 20261121);
  for (size_t i = 0; i < cases.size(); ++i) {
    runCase(*group, cases[i], {});
    if (i % 7 == 0) runIdentities(*group, cases[i], {});
  }
  group->barrier()->wait();
  std::printf("rank %d of %d: %zu collective cases passed over gloo\n", rv.rank, rv.worldSize,
              cases.size());
  group->shutdown(std::chrono::seconds(10));
  return 0;
}

}  // namespace
}  // namespace distlab::testing

int main() {
  try {
    return distlab::testing::runRank();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gloo_netns_rank: %s\n", e.what());
    return 1;
  }
}
