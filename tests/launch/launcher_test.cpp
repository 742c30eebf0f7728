// The Launcher library API: environment, failure handling and summary,
// SIGTERM -> SIGKILL escalation, stack dumps on --timeout, restarts, log
// files, rendezvous through the launcher's store, and two nodes on one host.
#include "emulator/launcher/launcher.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "runtime/comm/store/tcp_store_server.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/core/errors.hpp"
#include "tests/support/temp_dir.hpp"

namespace distlab::emulator {
namespace {

using std::chrono::milliseconds;

// Collects every rank's lines and the launcher's messages.
struct Capture {
  std::mutex mutex;
  std::map<int, std::vector<std::string>> out, err;
  std::string messages;
  void attach(LaunchOptions& o) {
    o.onOutput = [this](int rank, bool isStderr, const std::string& line) {
      std::lock_guard<std::mutex> lock(mutex);
      (isStderr ? err : out)[rank].push_back(line);
    };
    o.onMessage = [this](const std::string& text) {
      std::lock_guard<std::mutex> lock(mutex);
      messages += text + "\n";
    };
  }
};

LaunchOptions helper(int nproc, std::vector<std::string> args) {
  LaunchOptions o;
  o.nprocPerNode = nproc;
  o.masterPort = 0;
  o.stopGracePeriod = milliseconds(2000);
  o.timeout = milliseconds(30000);  // a safety net; tests that need a timeout set their own
  o.program = {DISTLAB_LAUNCH_HELPER};
  for (auto& a : args) o.program.push_back(std::move(a));
  return o;
}

TEST(LauncherTest, AllRanksSucceedWithTheTorchrunEnvironment) {
  LaunchOptions o = helper(3, {"--check-env", "--print", "2"});
  o.runId = "job7";
  Capture cap;
  cap.attach(o);
  LaunchResult r = Launcher(o).run();
  ASSERT_EQ(r.exitCode, 0) << cap.messages;
  EXPECT_EQ(r.attempts, 1);
  EXPECT_TRUE(r.summary.empty());
  EXPECT_GT(r.masterPort, 0);
  ASSERT_EQ(r.ranks.size(), 3u);
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_TRUE(r.ranks[rank].succeeded());
    EXPECT_EQ(r.ranks[rank].describe(), "ok");
    ASSERT_EQ(cap.out[rank].size(), 3u);
    EXPECT_EQ(cap.out[rank][0],
              "env RANK=" + std::to_string(rank) + " LOCAL_RANK=" + std::to_string(rank) +
                  " WORLD_SIZE=3 LOCAL_WORLD_SIZE=3 GROUP_RANK=0 MASTER_ADDR=127.0.0.1 "
                  "TORCHELASTIC_RUN_ID=job7 TORCHELASTIC_RESTART_COUNT=0 "
                  "DISTLAB_STORE_EXTERNAL=1 DISTLAB_STORE_PREFIX=job7/attempt_0 port_set=1");
    EXPECT_EQ(cap.out[rank][2], "line 1 from rank " + std::to_string(rank));
    EXPECT_EQ(cap.err[rank], std::vector<std::string>{"stderr line from rank " +
                                                      std::to_string(rank)});
  }
}

TEST(LauncherTest, AFailingRankStopsTheOthersAndIsNamed) {
  LaunchOptions o = helper(3, {"--exit-code-on-rank", "1:3"});
  Capture cap;
  cap.attach(o);
  Stopwatch watch;
  LaunchResult r = Launcher(o).run();
  EXPECT_LT(watch.elapsed(), o.stopGracePeriod) << "the others obey SIGTERM at once";
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.failedRank, 1);
  ASSERT_EQ(r.ranks.size(), 3u);
  EXPECT_EQ(r.ranks[1].exitCode, 3);
  EXPECT_FALSE(r.ranks[1].stoppedByLauncher);
  EXPECT_EQ(r.ranks[1].firstErrorLine, "error: rank 1 exits with code 3");
  for (int rank : {0, 2}) {
    EXPECT_TRUE(r.ranks[rank].stoppedByLauncher);
    EXPECT_EQ(r.ranks[rank].signal, SIGTERM);
    EXPECT_EQ(r.ranks[rank].describe(), "stopped: signal 15 (SIGTERM)");
  }
  EXPECT_NE(r.summary.find("rank 1 failed"), std::string::npos) << r.summary;
  EXPECT_NE(r.summary.find("exit code 3"), std::string::npos) << r.summary;
  EXPECT_NE(r.summary.find("error: rank 1 exits with code 3"), std::string::npos) << r.summary;
}

TEST(LauncherTest, RanksIgnoringSigtermAreKilledAfterTheGracePeriod) {
  LaunchOptions o = helper(2, {"--ignore-sigterm", "--barrier", "--exit-code-on-rank", "0:2"});
  o.stopGracePeriod = milliseconds(300);
  Stopwatch watch;
  LaunchResult r = Launcher(o).run();
  EXPECT_GE(watch.elapsed(), milliseconds(300));
  EXPECT_LT(watch.elapsed(), milliseconds(5000));
  EXPECT_EQ(r.failedRank, 0);
  EXPECT_EQ(r.ranks[1].signal, SIGKILL);
  EXPECT_EQ(r.ranks[1].describe(), "stopped: signal 9 (SIGKILL)");
}

TEST(LauncherTest, ASigkilledRankIsReportedBySignal) {
  LaunchOptions o = helper(2, {"--sigkill-on-rank", "0"});
  Capture cap;
  cap.attach(o);
  LaunchResult r = Launcher(o).run();
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.failedRank, 0);
  EXPECT_EQ(r.ranks[0].signal, SIGKILL);
  EXPECT_FALSE(r.ranks[0].stoppedByLauncher);
  EXPECT_NE(r.summary.find("signal 9 (SIGKILL)"), std::string::npos) << r.summary;
}

TEST(LauncherTest, TimeoutDumpsStacksAndNamesTheBlockedFunctions) {
  LaunchOptions o = helper(2, {"--barrier", "--hang-on-rank", "1"});
  o.timeout = milliseconds(1000);
  Capture cap;
  cap.attach(o);
  LaunchResult r = Launcher(o).run();
  EXPECT_EQ(r.exitCode, 124);
  EXPECT_TRUE(r.timedOut);
  ASSERT_EQ(r.ranks.size(), 2u);
  EXPECT_EQ(r.ranks[1].blockedIn, "distlab_test_hang_in_collective") << r.stackDump;
  EXPECT_EQ(r.ranks[0].blockedIn, "distlab_test_wait_for_peers") << r.stackDump;
  EXPECT_NE(r.stackDump.find("distlab_test_hang_in_collective"), std::string::npos);
  EXPECT_NE(cap.messages.find("===== rank 1"), std::string::npos) << "the dump is in the log";
  EXPECT_NE(r.summary.find("blocked in"), std::string::npos) << r.summary;
  EXPECT_NE(r.summary.find("distlab_test_hang_in_collective"), std::string::npos) << r.summary;
}

TEST(LauncherTest, RestartsRunTheWholeGroupAgainInANewRound) {
  LaunchOptions o = helper(2, {"--fail-until-restart", "2"});
  o.maxRestarts = 2;
  Capture cap;
  cap.attach(o);
  LaunchResult r = Launcher(o).run();
  EXPECT_EQ(r.exitCode, 0) << cap.messages;
  EXPECT_EQ(r.attempts, 3);
  EXPECT_EQ(cap.out[1].back(), "rank 1 ok in attempt 2");
  LaunchOptions fewer = helper(2, {"--fail-until-restart", "2"});
  fewer.maxRestarts = 1;
  Capture cap2;
  cap2.attach(fewer);
  LaunchResult r2 = Launcher(fewer).run();
  EXPECT_EQ(r2.exitCode, 1);
  EXPECT_EQ(r2.attempts, 2);
  EXPECT_EQ(r2.ranks[0].firstErrorLine, "error: attempt 1 fails on purpose");
}

TEST(LauncherTest, LogDirGetsOneFilePerRankAndAttempt) {
  testing::TempDir dir;
  LaunchOptions o = helper(2, {"--print", "1"});
  o.logDir = dir.path();
  o.runId = "logs";
  Capture cap;
  cap.attach(o);
  ASSERT_EQ(Launcher(o).run().exitCode, 0);
  std::ifstream in(dir.path() + "/logs/attempt_0/rank_1.log");
  std::string a, b;
  std::getline(in, a);
  std::getline(in, b);
  EXPECT_EQ(a, "line 0 from rank 1");
  EXPECT_EQ(b, "stderr line from rank 1");
}

TEST(LauncherTest, RanksRendezvousThroughTheLaunchersStore) {
  LaunchOptions o = helper(3, {"--rendezvous"});
  Capture cap;
  cap.attach(o);
  LaunchResult r = Launcher(o).run();
  ASSERT_EQ(r.exitCode, 0) << cap.messages;
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(cap.out[rank].at(0), "rank " + std::to_string(rank) + " of 3 sees sum=6");
  }
}

LaunchOptions node(int nodeRank, int port, std::vector<std::string> args) {
  LaunchOptions o = helper(2, std::move(args));
  o.nnodes = 2;
  o.nodeRank = nodeRank;
  o.masterPort = port;
  o.rendezvousTimeout = milliseconds(20000);
  return o;
}

int freePort() {
  comm::TCPStoreServer probe(0);
  return probe.port();
}

TEST(LauncherTest, TwoLaunchersWithTwoNodesFormOneJob) {
  int port = freePort();
  LaunchOptions o0 = node(0, port, {"--rendezvous", "--check-env"});
  LaunchOptions o1 = node(1, port, {"--rendezvous", "--check-env"});
  Capture c0, c1;
  c0.attach(o0);
  c1.attach(o1);
  LaunchResult r1;
  std::thread second([&] { r1 = Launcher(o1).run(); });
  LaunchResult r0 = Launcher(o0).run();
  second.join();
  ASSERT_EQ(r0.exitCode, 0) << c0.messages;
  ASSERT_EQ(r1.exitCode, 0) << c1.messages;
  EXPECT_EQ(r1.ranks[0].rank, 2);
  EXPECT_EQ(c1.out[3].at(0), "rank 3 of 4 sees sum=10");
  EXPECT_EQ(c0.out[0].at(0), "rank 0 of 4 sees sum=10");
  EXPECT_NE(c1.out[3].at(1).find("RANK=3 LOCAL_RANK=1 WORLD_SIZE=4 LOCAL_WORLD_SIZE=2 "
                                 "GROUP_RANK=1"),
            std::string::npos);
}

TEST(LauncherTest, AFailureOnOneNodeStopsTheOtherNode) {
  int port = freePort();
  LaunchOptions o0 = node(0, port, {"--fail-on-node-rank", "3:1"});
  LaunchOptions o1 = node(1, port, {"--fail-on-node-rank", "3:1"});
  Capture c0, c1;
  c0.attach(o0);
  c1.attach(o1);
  LaunchResult r1;
  std::thread second([&] { r1 = Launcher(o1).run(); });
  LaunchResult r0 = Launcher(o0).run();
  second.join();
  EXPECT_EQ(r1.exitCode, 1);
  EXPECT_EQ(r1.failedRank, 3);
  EXPECT_EQ(r0.exitCode, 1);
  EXPECT_TRUE(r0.remoteFailure);
  EXPECT_TRUE(r0.ranks[0].stoppedByLauncher);
  EXPECT_NE(r0.summary.find("another node failed"), std::string::npos) << r0.summary;
}

TEST(LauncherTest, OptionsAreValidatedNamingTheFlag) {
  auto error = [](LaunchOptions o) {
    try {
      Launcher l(o);
    } catch (const ValueError& e) {
      return std::string(e.what());
    }
    return std::string("<accepted>");
  };
  LaunchOptions ok = helper(1, {});
  auto with = [&](auto change) {
    LaunchOptions o = ok;
    change(o);
    return error(o);
  };
  EXPECT_EQ(with([](LaunchOptions& o) { o.nprocPerNode = 0; }).rfind("--nproc-per-node", 0), 0u);
  EXPECT_EQ(with([](LaunchOptions& o) { o.nnodes = 0; }).rfind("--nnodes", 0), 0u);
  EXPECT_EQ(with([](LaunchOptions& o) { o.nodeRank = 1; }).rfind("--node-rank", 0), 0u);
  EXPECT_EQ(with([](LaunchOptions& o) { o.masterPort = 70000; }).rfind("--master-port", 0), 0u);
  EXPECT_EQ(with([](LaunchOptions& o) {
              o.masterPort = 0;
              o.nnodes = 2;
            }).rfind("--master-port", 0),
            0u);
  EXPECT_EQ(with([](LaunchOptions& o) { o.maxRestarts = -1; }).rfind("--max-restarts", 0), 0u);
  EXPECT_EQ(with([](LaunchOptions& o) { o.monitorInterval = milliseconds(0); })
                .rfind("--monitor-interval", 0),
            0u);
  EXPECT_EQ(with([](LaunchOptions& o) { o.runId = "a/b"; }).rfind("--run-id", 0), 0u);
  EXPECT_EQ(with([](LaunchOptions& o) { o.timeout = milliseconds(-1); }).rfind("--timeout", 0), 0u);
  EXPECT_EQ(with([](LaunchOptions& o) { o.program.clear(); }).rfind("program", 0), 0u);
  EXPECT_EQ(with([](LaunchOptions& o) { o.masterAddr = ""; }).rfind("--master-addr", 0), 0u);
}

TEST(LauncherTest, AMissingProgramIsASetupError) {
  LaunchOptions o = helper(2, {});
  o.program = {"/nonexistent/distlab-program"};
  Capture cap;
  cap.attach(o);
  LaunchResult r = Launcher(o).run();
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.error.find("cannot execute '/nonexistent/distlab-program'"), std::string::npos)
      << r.error;
}

}  // namespace
}  // namespace distlab::emulator
