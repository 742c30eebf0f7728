// Backend options are read by one validated reader (Note [Backend options]):
// every bad value is a ValueError naming the key, raised before a group
// touches the store, and the defaults of the init options are valid values
// all the way down (a default InitOptions reaches the env:// rendezvous with
// the documented timeout, not the unset marker).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/comm/backend_options.hpp"
#include "runtime/comm/backend_registry.hpp"
#include "runtime/comm/group_management.hpp"
#include "runtime/comm/store/tcp_store_server.hpp"
#include "runtime/core/errors.hpp"
#include "tests/comm/comm_test_util.hpp"
#include "tests/support/spawn.hpp"
#include "tests/support/test_groups.hpp"

namespace distlab::testing {
namespace {

struct BadOption {
  std::string key, value, needle;
};

// One row per class of bad value; each needle is what the message must name.
const std::vector<BadOption> kBadOptions = {
    {"shm.slot_bytes", "0", "[4096, 1073741824]"},  // was a silent hang: steps of 0 bytes
    {"shm.slot_bytes", "-1", "shm.slot_bytes='-1'"},
    {"shm.slot_bytes", "99999999999999999999", "whole number"},
    {"shm.slot_bytes", "", "whole number"},
    {"shm.slot_bytes", "4097", "multiple of 4096"},
    {"shm.slot_bytes", "12abc", "whole number"},
    {"shm.channel_bytes", "12288", "power of two"},
    {"shm.channel_bytes", "2048", "[4096, 1073741824]"},
    {"shm.allreduce_algo", "zzz", "auto, direct, rsag"},
    {"shm.single_copy", "maybe", "auto, on, off"},
    {"shm.single_copy_min_bytes", "-5", "whole number"},
    {"shm.eager_bytes", "65537", "[0, 65536]"},  // past the outbox entry
    {"shm.eager_bytes", "-1", "whole number"},
    {"shm.no_such_key", "1", "'shm.no_such_key' is not known"},
    {"noprefix", "1", "'noprefix' is not known"},
    {"frob.key", "1", "no backend 'frob'"},
};

TEST(BackendOptions, EveryBadValueIsAValueErrorNamingTheKey) {
  for (const BadOption& bad : kBadOptions) {
    SCOPED_TRACE(bad.key + "=" + bad.value);
    try {
      comm::validateBackendOptions({{bad.key, bad.value}});
      ADD_FAILURE() << "accepted";
    } catch (const ValueError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(bad.key), std::string::npos) << message;
      EXPECT_NE(message.find(bad.needle), std::string::npos) << message;
    }
  }
}

TEST(BackendOptions, GoodValuesAndTheDefaultsPass) {
  EXPECT_NO_THROW(comm::validateBackendOptions({}));
  EXPECT_NO_THROW(comm::validateBackendOptions({{"shm.slot_bytes", "4096"},
                                                {"shm.channel_bytes", "8192"},
                                                {"shm.allreduce_algo", "rsag"},
                                                {"shm.single_copy", "off"},
                                                {"shm.single_copy_min_bytes", "0"},
                                                {"shm.eager_bytes", "0"}}));
  const auto keys = comm::knownBackendOptionKeys();
  EXPECT_NE(std::find(keys.begin(), keys.end(), "shm.slot_bytes"), keys.end());
}

// DETAIL's helper group of a large group (Note [DETAIL through the backend]):
// its slots must leave every rank a 64-byte part, which ShmSegment::open
// checks. Past 512 ranks the fingerprint slots alone did not (a 1,024-rank
// DETAIL group failed with "slot bytes 32768 leave no 64-byte part per rank").
TEST(BackendOptions, ShmDetailHelperSlotsHoldEveryRankOfTheGroup) {
  const auto& helperOptions = comm::lookupBackend("shm").detailHelperOptions;
  ASSERT_TRUE(helperOptions);
  for (const int size : {2, 512, 513, 1000, 1024}) {
    const auto options = helperOptions(512, size);
    EXPECT_NO_THROW(comm::validateBackendOptions(options)) << size;
    const uint64_t slot = std::stoull(options.at("shm.slot_bytes"));
    EXPECT_GE(slot, 64u * size) << size;
    EXPECT_GE(slot, 64u * 512) << size;  // still 64 fingerprint slots
    EXPECT_EQ(slot % 4096, 0u) << size;
  }
}

// A bad option fails group creation at once, on the rank that has it, before
// the backend waits for its peers (which would otherwise hang or time out).
TEST(BackendOptions, GroupCreationRefusesABadValueBeforeTheStore) {
  spawn(SpawnMode::kThreads, 1, [](RankContext& ctx) {
    const double seconds = expectThrows<ValueError>(
        [&] {
          makeTestGroup(ctx, "shm", "bad_slot", std::chrono::seconds(60),
                        {{"shm.slot_bytes", "0"}});
        },
        {"shm.slot_bytes='0'"});
    // Well before the group's 60 s timeout: the check ran before any wait
    // (a bound on a hang, not a performance target).
    EXPECT_LT(seconds, 20.0);
  });
}

// Note [Backend options]'s other half: the unset timeout of InitOptions is a
// valid value. Before the fix it reached the env:// rendezvous as -1 ms and
// every rank aborted with "rendezvous: timeout must not be negative".
TEST(DefaultOptions, InitProcessGroupWithOnlyABackendRendezvousesThroughTheEnvironment) {
  spawn(SpawnMode::kProcesses, 1, [](RankContext&) {
    const int port = [] {
      comm::TCPStoreServer probe(0);
      return probe.port();
    }();
    ::setenv("RANK", "0", 1);
    ::setenv("WORLD_SIZE", "1", 1);
    ::setenv("MASTER_ADDR", "127.0.0.1", 1);
    ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
    auto group = comm::initProcessGroup({.backend = "shm"});
    EXPECT_EQ(group->timeout(), comm::kDefaultProcessGroupTimeout);
    auto sub = comm::newGroup({});
    EXPECT_EQ(sub->timeout(), comm::kDefaultProcessGroupTimeout);
    comm::destroyProcessGroup();
  });
}

}  // namespace
}  // namespace distlab::testing
