// rendezvous(): init URLs (env://, tcp://, file://), explicit stores, and
// errors that name the variable or URL part at fault.
#include "runtime/comm/store/rendezvous.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <fcntl.h>
#include <unistd.h>

#include <future>

#include "runtime/comm/store/hash_store.hpp"
#include "runtime/comm/store/tcp_store.hpp"
#include "runtime/comm/store/tcp_store_server.hpp"
#include "runtime/core/errors.hpp"
#include "tests/support/temp_dir.hpp"

namespace distlab::comm {
namespace {

using std::chrono::milliseconds;

// Sets (or unsets, for nullptr) environment variables for one test.
class ScopedEnv {
 public:
  ScopedEnv(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (const auto& [name, value] : vars) {
      const char* old = ::getenv(name);
      saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      if (value) ::setenv(name, value, 1);
      else ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    for (const auto& [name, old] : saved_) {
      if (old) ::setenv(name.c_str(), old->c_str(), 1);
      else ::unsetenv(name.c_str());
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

int freePort() {
  TCPStoreServer probe(0);
  return probe.port();
}

std::string errorOf(const RendezvousOptions& o) {
  try {
    rendezvous(o);
  } catch (const ValueError& e) {
    return e.what();
  }
  return "<no ValueError>";
}

TEST(RendezvousTest, ParsesUrls) {
  InitMethod m = parseInitMethod("tcp://10.1.1.20:23456?rank=1&world_size=4");
  EXPECT_EQ(m.scheme, "tcp");
  EXPECT_EQ(m.location, "10.1.1.20:23456");
  EXPECT_EQ(m.query.at("rank"), "1");
  EXPECT_EQ(m.query.at("world_size"), "4");
  EXPECT_EQ(parseInitMethod("file:///tmp/x").location, "/tmp/x");
  EXPECT_EQ(parseInitMethod("env://").scheme, "env");
  EXPECT_THROW(parseInitMethod("10.1.1.20:23456"), ValueError);
  EXPECT_THROW(parseInitMethod("udp://h:1"), ValueError);
  EXPECT_THROW(parseInitMethod("tcp://h:1?rank"), ValueError);
}

TEST(RendezvousTest, EnvErrorsNameTheVariable) {
  ScopedEnv env({{"RANK", nullptr}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", nullptr},
                 {"MASTER_PORT", "1234"}, {"DISTLAB_STORE_EXTERNAL", nullptr}});
  EXPECT_NE(errorOf({.initMethod = "env://"}).find("RANK"), std::string::npos);
  {
    ScopedEnv bad({{"RANK", "1"}, {"WORLD_SIZE", "two"}});
    EXPECT_NE(errorOf({.initMethod = "env://"}).find("WORLD_SIZE='two'"), std::string::npos);
  }
  {
    ScopedEnv bad({{"RANK", "1"}});
    EXPECT_NE(errorOf({}).find("MASTER_ADDR"), std::string::npos);
  }
  {
    ScopedEnv bad({{"RANK", "0"}, {"MASTER_PORT", nullptr}});
    EXPECT_NE(errorOf({}).find("MASTER_PORT"), std::string::npos);
  }
  {
    ScopedEnv bad({{"RANK", "0"}, {"MASTER_PORT", "70000"}});
    EXPECT_NE(errorOf({}).find("MASTER_PORT=70000"), std::string::npos);
  }
  {
    ScopedEnv bad({{"RANK", "2"}});
    EXPECT_NE(errorOf({}).find("rank must be given and lie in [0, 2) (found 2)"),
              std::string::npos);
  }
}

TEST(RendezvousTest, EnvRankZeroHostsAndOthersConnect) {
  std::string port = std::to_string(freePort());
  ScopedEnv env({{"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", port.c_str()},
                 {"DISTLAB_STORE_EXTERNAL", nullptr}, {"DISTLAB_STORE_PREFIX", nullptr}});
  auto other = std::async(std::launch::async, [] {
    auto r = rendezvous({.rank = 1, .timeout = milliseconds(10000)});
    r.store->setString("from1", "hi");
    return r.store->getString("from0");
  });
  auto r0 = rendezvous({.rank = 0, .timeout = milliseconds(10000)});
  EXPECT_EQ(r0.rank, 0);
  EXPECT_EQ(r0.worldSize, 2);
  EXPECT_TRUE(dynamic_cast<TCPStore&>(*r0.store).isMaster());
  r0.store->setString("from0", "hello");
  EXPECT_EQ(r0.store->getString("from1"), "hi");
  EXPECT_EQ(other.get(), "hello");
}

TEST(RendezvousTest, ExternalServerAndPrefixFromTheLauncher) {
  TCPStoreServer server(0);
  std::string port = std::to_string(server.port());
  ScopedEnv env({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_ADDR", "127.0.0.1"},
                 {"MASTER_PORT", port.c_str()}, {"DISTLAB_STORE_EXTERNAL", "1"},
                 {"DISTLAB_STORE_PREFIX", "job/attempt_1"}});
  auto r = rendezvous({.initMethod = "env://", .timeout = milliseconds(5000)});
  r.store->setString("k", "v");
  TCPStore direct({.host = "127.0.0.1", .port = server.port()});
  EXPECT_EQ(direct.getString("job/attempt_1/k"), "v");
  EXPECT_FALSE(direct.check({"k"}));
}

TEST(RendezvousTest, TcpUrlWithQueryOrArguments) {
  int port = freePort();
  std::string url = "tcp://127.0.0.1:" + std::to_string(port);
  auto worker = std::async(std::launch::async, [&] {
    auto r = rendezvous({.initMethod = url + "?rank=1&world_size=2",
                         .timeout = milliseconds(10000)});
    EXPECT_EQ(r.rank, 1);
    return r.store->getString("x");
  });
  auto r0 = rendezvous({.initMethod = url, .rank = 0, .worldSize = 2,
                        .timeout = milliseconds(10000)});
  r0.store->setString("x", "y");
  EXPECT_EQ(worker.get(), "y");
  EXPECT_NE(errorOf({.initMethod = url + "?rank=1", .rank = 0, .worldSize = 2})
                .find("says rank=1 but the rank argument is 0"),
            std::string::npos);
  EXPECT_NE(errorOf({.initMethod = url, .worldSize = 2}).find("rank must be given"),
            std::string::npos);
  EXPECT_NE(errorOf({.initMethod = "tcp://nohost", .rank = 0, .worldSize = 1})
                .find("expected tcp://host:port"),
            std::string::npos);
}

TEST(RendezvousTest, FileUrl) {
  distlab::testing::TempDir dir;
  std::string url = "file://" + dir.file("rdzv");
  auto r1 = rendezvous({.initMethod = url + "?world_size=2", .rank = 1});
  auto r0 = rendezvous({.initMethod = url, .rank = 0, .worldSize = 2});
  r1.store->setString("a", "b");
  EXPECT_EQ(r0.store->getString("a"), "b");
  EXPECT_NE(errorOf({.initMethod = url, .worldSize = 2}).find("rank must be given"),
            std::string::npos);
}

TEST(RendezvousTest, ExplicitStore) {
  auto store = std::make_shared<HashStore>();
  auto r = rendezvous({.store = store, .rank = 1, .worldSize = 3});
  EXPECT_EQ(r.store, store);
  EXPECT_EQ(r.rank, 1);
  EXPECT_EQ(r.worldSize, 3);
  EXPECT_NE(errorOf({.initMethod = "env://", .store = store, .rank = 0, .worldSize = 1})
                .find("mutually exclusive"),
            std::string::npos);
  EXPECT_NE(errorOf({.store = store, .rank = 3, .worldSize = 3}).find("[0, 3) (found 3)"),
            std::string::npos);
}

// Note [Ranks released together]. One test, in this order: the wait happens
// once per process, so the case that releases must come last.
TEST(RendezvousTest, LaunchReleaseWaitsForTheLaunchersEndOfFile) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  // Not an open descriptor: the variable is named.
  try {
    awaitLaunchRelease(1 << 20, milliseconds(1000));
    ADD_FAILURE() << "an unopened descriptor was accepted";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("DISTLAB_LAUNCH_RELEASE_FD"), std::string::npos);
  }
  // The launcher still holds the write end: bounded by the limit.
  EXPECT_THROW(awaitLaunchRelease(fds[0], milliseconds(50)), DistStoreError);
  // Bytes are read past; the end of file releases, and closes the read end.
  ASSERT_EQ(::write(fds[1], "x", 1), 1);
  ::close(fds[1]);
  awaitLaunchRelease(fds[0], milliseconds(5000));
  EXPECT_EQ(::fcntl(fds[0], F_GETFD), -1);
  // Later calls (a second group's env://) return at once.
  awaitLaunchRelease(fds[0], milliseconds(1));
}

}  // namespace
}  // namespace distlab::comm
