// TCPStore across processes: rank 0 hosts the server (port 0, published
// through the spawner's FileStore), every rank adds to one counter 1000 times
// and the total is exact; a killed client does not disturb the others.
#include <gtest/gtest.h>

#include "runtime/comm/store/tcp_store.hpp"
#include "tests/support/spawn.hpp"

namespace distlab::comm {
namespace {

using testing::RankContext;
using testing::SpawnMode;
using std::chrono::milliseconds;

std::unique_ptr<TCPStore> joinTcpStore(RankContext& ctx) {
  TCPStoreOptions o{.host = "127.0.0.1", .port = 0, .isMaster = ctx.rank == 0,
                    .worldSize = ctx.worldSize, .timeout = milliseconds(20000)};
  if (ctx.rank == 0) {
    auto store = std::make_unique<TCPStore>([&] {
      // The master publishes its ephemeral port before waiting for workers.
      TCPStoreOptions m = o;
      m.waitForWorkers = false;
      return m;
    }());
    ctx.store->setString("port", std::to_string(store->port()));
    store->waitForWorkers();
    return store;
  }
  o.port = std::stoi(ctx.store->getString("port"));
  return std::make_unique<TCPStore>(o);
}

// The master must outlive every client's last request: clients say goodbye
// with a set (acknowledged by the server) and the master waits for all of them.
void leave(TCPStore& store, RankContext& ctx, const std::vector<int>& ranks) {
  if (ctx.rank != 0) {
    store.setString("bye/" + std::to_string(ctx.rank), "1");
    return;
  }
  std::vector<std::string> keys;
  for (int r : ranks) {
    if (r != 0) keys.push_back("bye/" + std::to_string(r));
  }
  store.wait(keys);
}

// Every rank bumps `key`; the one that completes the count sets `done`; all wait for it.
void barrier(TCPStore& store, const std::string& name, int worldSize) {
  if (store.add(name + "/count", 1) == worldSize) store.setString(name + "/done", "1");
  store.wait({name + "/done"});
}

TEST(TCPStoreMultiProcessTest, ConcurrentAddsFromProcessesAreExact) {
  constexpr int kAdds = 1000;
  constexpr int kRanks = 4;
  testing::spawn(SpawnMode::kProcesses, kRanks, [](RankContext& ctx) {
    auto store = joinTcpStore(ctx);
    for (int i = 0; i < kAdds; ++i) store->add("counter", 1);
    barrier(*store, "added", ctx.worldSize);
    EXPECT_EQ(store->add("counter", 0), kRanks * kAdds);
    leave(*store, ctx, {0, 1, 2, 3});
  }, testing::SpawnOptions{.timeout = milliseconds(60000)});
}

TEST(TCPStoreMultiProcessTest, AKilledClientDoesNotDisturbTheOthers) {
  testing::spawn(SpawnMode::kProcesses, 3, [](RankContext& ctx) {
    auto store = joinTcpStore(ctx);
    if (ctx.rank == 2) {
      store->add("counter", 1);
      store->setString("rank2-added", "1");
      ctx.killSelf();
    }
    store->wait({"rank2-added"});
    store->add("counter", 1);
    barrier(*store, "survivors", 2);
    EXPECT_EQ(store->add("counter", 0), 3);
    leave(*store, ctx, {0, 1});
  }, testing::SpawnOptions{.timeout = milliseconds(30000), .mayDie = {2}});
}

}  // namespace
}  // namespace distlab::comm
