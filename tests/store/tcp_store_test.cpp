// TCPStore specifics: ephemeral ports, connect retries, wait_for_workers,
// parked waiters that never block other clients, clear connection errors.
#include "runtime/comm/store/tcp_store.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "runtime/comm/store/socket.hpp"
#include "runtime/comm/store/tcp_store_server.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::comm {
namespace {

using std::chrono::milliseconds;

TCPStoreOptions master(int worldSize = -1, milliseconds timeout = milliseconds(5000)) {
  return TCPStoreOptions{.host = "127.0.0.1", .port = 0, .isMaster = true,
                         .worldSize = worldSize, .timeout = timeout};
}

TCPStoreOptions client(int port, int worldSize = -1, milliseconds timeout = milliseconds(5000)) {
  return TCPStoreOptions{.host = "127.0.0.1", .port = port, .isMaster = false,
                         .worldSize = worldSize, .timeout = timeout};
}

TEST(TCPStoreTest, PortZeroBindsAnEphemeralPortThatClientsReach) {
  TCPStore server(master(1));
  EXPECT_GT(server.port(), 0);
  EXPECT_TRUE(server.isMaster());
  TCPStore other(client(server.port()));
  EXPECT_FALSE(other.isMaster());
  server.setString("k", "v");
  EXPECT_EQ(other.getString("k"), "v");
}

TEST(TCPStoreTest, MasterWaitsForWorkersThenSucceeds) {
  // Reserve a port by binding one, then release it for the master.
  int port = 0;
  { TCPStore probe(master()); port = probe.port(); }
  auto clientsDone = std::async(std::launch::async, [port] {
    TCPStore a(client(port, 3));
    TCPStore b(client(port, 3));
    a.wait({"go"});
  });
  TCPStore server(TCPStoreOptions{.host = "127.0.0.1", .port = port, .isMaster = true,
                                  .worldSize = 3, .timeout = milliseconds(10000)});
  server.setString("go", "1");
  clientsDone.get();
}

TEST(TCPStoreTest, WaitForWorkersTimesOutNamingTheCount) {
  try {
    TCPStore server(master(3, milliseconds(100)));
    FAIL() << "only 1 of 3 workers joined";
  } catch (const DistStoreError& e) {
    EXPECT_NE(std::string(e.what()).find("1 of 3 joined"), std::string::npos) << e.what();
  }
}

TEST(TCPStoreTest, ClientRetriesUntilTheServerStarts) {
  int port = 0;
  { TCPStore probe(master()); port = probe.port(); }
  int64_t retriesBefore = detail::connectRetries();
  auto late = std::async(std::launch::async, [port] {
    TCPStore c(client(port, -1, milliseconds(10000)));
    return c.getString("hello");
  });
  // The server starts only once the client has been refused and is retrying.
  Deadline deadline = Deadline::after(milliseconds(5000));
  while (detail::connectRetries() == retriesBefore) {
    ASSERT_FALSE(deadline.expired()) << "the client never retried";
    ASSERT_NE(late.wait_for(milliseconds(1)), std::future_status::ready)
        << "the client gave up instead of retrying";
  }
  TCPStore server(TCPStoreOptions{.host = "127.0.0.1", .port = port, .isMaster = true});
  server.setString("hello", "world");
  EXPECT_EQ(late.get(), "world");
}

TEST(TCPStoreTest, ClientWithoutServerFailsAfterTimeoutNamingAddress) {
  int port = 0;
  { TCPStore probe(master()); port = probe.port(); }
  try {
    TCPStore c(client(port, -1, milliseconds(150)));
    FAIL();
  } catch (const DistNetworkError& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(port)), std::string::npos)
        << e.what();
  }
}

TEST(TCPStoreTest, ParkedGetDoesNotBlockOtherClientsOrThreads) {
  TCPStore server(master());
  TCPStore c1(client(server.port()));
  auto blocked = std::async(std::launch::async, [&] { return c1.getString("late"); });
  // The same object (another pooled connection) and another client keep working.
  c1.setString("x", "1");
  TCPStore c2(client(server.port()));
  EXPECT_EQ(c2.getString("x"), "1");
  EXPECT_EQ(c2.add("n", 5), 5);
  c2.setString("late", "finally");
  EXPECT_EQ(blocked.get(), "finally");
}

TEST(TCPStoreTest, ServerSideTimeoutLeavesTheConnectionUsable) {
  TCPStore server(master(-1, milliseconds(50)));
  EXPECT_THROW(server.get("missing"), DistStoreError);
  server.setString("k", "v");
  EXPECT_EQ(server.getString("k"), "v");
}

TEST(TCPStoreTest, ClientsSeeAClosedServerAsANetworkError) {
  auto server = std::make_unique<TCPStore>(master());
  TCPStore c(client(server->port(), -1, milliseconds(300)));
  c.setString("k", "v");
  server.reset();
  try {
    c.getString("k");
    FAIL();
  } catch (const DistError& e) {
    EXPECT_NE(std::string(e.what()).find("get(k)"), std::string::npos) << e.what();
  }
}

TEST(TCPStoreTest, BadOptionsAreValueErrors) {
  EXPECT_THROW(TCPStore(TCPStoreOptions{.port = 70000, .isMaster = true}), ValueError);
  EXPECT_THROW(TCPStore(TCPStoreOptions{.port = 0, .isMaster = false}), ValueError);
  EXPECT_THROW(TCPStore(TCPStoreOptions{.port = 0, .isMaster = true, .worldSize = 0}), ValueError);
  EXPECT_THROW(TCPStore(TCPStoreOptions{.host = "", .port = 0, .isMaster = true}), ValueError);
}

TEST(TCPStoreTest, BindingABusyPortNamesIt) {
  TCPStore first(master());
  try {
    TCPStore second(TCPStoreOptions{.port = first.port(), .isMaster = true});
    FAIL();
  } catch (const DistNetworkError& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(first.port())), std::string::npos);
  }
}

// The local address the kernel lists for a listening TCP socket on `port`
// (from /proc/net/tcp: "0100007F" is 127.0.0.1, "00000000" is 0.0.0.0).
std::string listeningAddress(int port) {
  std::ifstream in("/proc/net/tcp");
  std::string line;
  std::getline(in, line);  // header
  char portHex[8];
  std::snprintf(portHex, sizeof(portHex), "%04X", port);
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state;
    fields >> slot >> local >> remote >> state;
    if (state == "0A" && local.substr(local.find(':') + 1) == portHex) {
      return local.substr(0, local.find(':'));
    }
  }
  return "not listening";
}

TEST(TCPStoreTest, BindAddressIsLoopbackForLoopbackHostsOnly) {
  EXPECT_EQ(storeBindAddress("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(storeBindAddress("localhost"), "127.0.0.1");
  EXPECT_EQ(storeBindAddress("::1"), "127.0.0.1");
  EXPECT_EQ(storeBindAddress("10.231.7.1"), "0.0.0.0");
  EXPECT_EQ(storeBindAddress("node0.example"), "0.0.0.0");
  EXPECT_EQ(storeBindAddress("127.0.1.1"), "0.0.0.0") << "a host name's loopback alias";

  TCPStore single(master());  // host 127.0.0.1: a single-node run
  EXPECT_EQ(listeningAddress(single.port()), "0100007F");
  TCPStoreServer byDefault(0);
  EXPECT_EQ(listeningAddress(byDefault.port()), "0100007F");
  TCPStoreServer everywhere(TCPStoreServerOptions{.bindAddress = "0.0.0.0"});
  EXPECT_EQ(listeningAddress(everywhere.port()), "00000000");
  TCPStore viaWildcard(client(everywhere.port()));  // reachable through loopback too
  viaWildcard.setString("k", "v");
  EXPECT_EQ(viaWildcard.getString("k"), "v");
}

}  // namespace
}  // namespace distlab::comm
