// The Gloo backend's plumbing: interface lists (GLOO_SOCKET_IFNAME), the store
// adapter's key prefix and timeout, round-robin over several interfaces, and
// the same-count rule.
#include <gtest/gtest.h>

#include <chrono>

#include "runtime/comm/backends/gloo/gloo_backend.hpp"
#include "runtime/comm/backends/gloo/gloo_device.hpp"
#include "runtime/comm/backends/gloo/gloo_store_adapter.hpp"
#include "runtime/comm/process_group.hpp"
#include "runtime/comm/store/hash_store.hpp"
#include "runtime/core/errors.hpp"
#include "tests/comm/comm_test_util.hpp"
#include "tests/support/spawn.hpp"

namespace distlab::testing {
namespace {

using comm::gloo_backend::GlooStoreAdapter;
using comm::gloo_backend::parseIfnameList;
using comm::gloo_backend::resolveDeviceSpec;

TEST(GlooDevice, ParsesCommaSeparatedInterfaceLists) {
  EXPECT_EQ(parseIfnameList("eth0", "X"), (std::vector<std::string>{"eth0"}));
  EXPECT_EQ(parseIfnameList("eth0, eth1 ,eth2", "X"),
            (std::vector<std::string>{"eth0", "eth1", "eth2"}));
  for (const char* bad : {"", "eth0,", ",eth0", "eth0,,eth1", " "}) {
    try {
      parseIfnameList(bad, "GLOO_SOCKET_IFNAME");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("GLOO_SOCKET_IFNAME"), std::string::npos) << e.what();
    }
  }
}

TEST(GlooDevice, OptionsTakePrecedenceAndDefaultIsBindable) {
  // The second argument is GLOO_SOCKET_IFNAME as read (BackendContext::env).
  auto spec = resolveDeviceSpec({{"gloo.socket_ifname", "lo,lo"}}, {"eth9"});
  EXPECT_EQ(spec.ifnames, (std::vector<std::string>{"lo", "lo"}));
  EXPECT_EQ(spec.source, "option gloo.socket_ifname");
  // GLOO_SOCKET_IFNAME outranks gloo.hostname.
  spec = resolveDeviceSpec({{"gloo.hostname", "127.0.0.1"}}, {"lo"});
  EXPECT_EQ(spec.ifnames, (std::vector<std::string>{"lo"}));
  EXPECT_EQ(spec.source, "GLOO_SOCKET_IFNAME");
  spec = resolveDeviceSpec({{"gloo.hostname", "127.0.0.1"}}, {});
  EXPECT_TRUE(spec.ifnames.empty());
  EXPECT_EQ(spec.hostname, "127.0.0.1");
  EXPECT_EQ(spec.source, "option gloo.hostname");
  EXPECT_FALSE(comm::gloo_backend::defaultHostname().empty());
}

TEST(GlooDevice, UnknownInterfaceIsAValueErrorNamingIt) {
  try {
    comm::gloo_backend::createDevices(
        resolveDeviceSpec({{"gloo.socket_ifname", "nosuchif0"}}, {}));
    ADD_FAILURE() << "created a device on a missing interface";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("nosuchif0"), std::string::npos) << e.what();
  }
}

TEST(GlooStoreAdapter, PrefixesKeysAndBoundsWaits) {
  auto store = std::make_shared<comm::HashStore>();
  GlooStoreAdapter adapter(store, "grp/gloo/0/", std::chrono::milliseconds(100));
  adapter.set("1", std::vector<char>{'a', 'b'});
  EXPECT_EQ(store->getString("grp/gloo/0/1"), "ab");
  EXPECT_EQ(adapter.get("1"), (std::vector<char>{'a', 'b'}));
  Stopwatch watch;
  EXPECT_THROW(adapter.wait({"missing"}), DistError);
  EXPECT_LT(watch.elapsedSeconds(), 5.0);
}

std::shared_ptr<comm::ProcessGroup> makeGroup(RankContext& ctx, const std::string& ifnames) {
  comm::ProcessGroupConfig config;
  config.store = ctx.store;
  config.rank = ctx.rank;
  config.size = ctx.worldSize;
  config.name = "ifaces";
  config.timeout = std::chrono::seconds(10);
  config.backendSpec = "gloo";
  return comm::createProcessGroup(config, {{"gloo.socket_ifname", ifnames}});
}

TEST(GlooDevice, SeveralInterfacesAreUsedRoundRobin) {
  spawn(SpawnMode::kThreads, 3, [](RankContext& ctx) {
    auto g = makeGroup(ctx, "lo,lo");
    auto backend = std::dynamic_pointer_cast<comm::gloo_backend::GlooBackend>(
        g->getBackend(DeviceType::kCPU));
    ASSERT_TRUE(backend);
    EXPECT_EQ(backend->numContexts(), 2u);
    for (int i = 1; i <= 4; ++i) {  // collectives alternate between the two contexts
      Tensor t = full({5}, static_cast<double>(i * (ctx.rank + 1)));
      g->allreduce(t)->wait();
      expectEqualTensor(t, full({5}, 6.0 * i), "allreduce over two interfaces");
    }
  });
}

TEST(GlooDevice, DifferentInterfaceCountsAreRejected) {
  spawn(SpawnMode::kThreads, 2, [](RankContext& ctx) {
    try {
      makeGroup(ctx, ctx.rank == 0 ? "lo" : "lo,lo");
      ADD_FAILURE() << "rank " << ctx.rank << " accepted mismatched interface counts";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("same number of interfaces"), std::string::npos)
          << e.what();
    }
  });
}

}  // namespace
}  // namespace distlab::testing
