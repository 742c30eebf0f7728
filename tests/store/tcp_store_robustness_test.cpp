// The TCP store server survives any client input: malformed, truncated and
// oversized frames and mid-request disconnects drop only that client, and the
// server keeps serving everyone else.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "runtime/comm/store/tcp_store.hpp"
#include "runtime/comm/store/tcp_store_protocol.hpp"
#include "runtime/comm/store/tcp_store_server.hpp"
#include "runtime/core/errors.hpp"
#include "tests/store/tcp_store_raw_client.hpp"

namespace distlab::comm {
namespace {

using detail::Encoder;
using detail::Op;
using std::chrono::milliseconds;
using testing::expectServing;
using testing::frameOf;
using testing::RawClient;

TEST(TCPStoreRobustnessTest, BadFramesDropOnlyTheirClient) {
  TCPStoreServer server(0);
  // An idle client with half a frame must not stall anyone.
  RawClient idle(server.port());
  idle.hello();
  idle.send(std::string("\x10\x00\x00\x00\x02", 5));

  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not the protocol at all", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"},
      {"oversized length", std::string("\xff\xff\xff\xff", 4)},
      {"zero length", std::string("\x00\x00\x00\x00", 4)},
      {"bad magic", frameOf(Encoder().u8(1).u32(0xdeadbeef).u32(1).u8(0).payload())},
  };
  int64_t expectedDrops = 0;
  for (const auto& [what, bytes] : cases) {
    RawClient c(server.port());
    c.send(bytes);
    EXPECT_TRUE(c.closedByServer()) << what;
    EXPECT_EQ(server.droppedClients(), ++expectedDrops) << what;
    expectServing(server.port());
  }
  const std::vector<std::pair<std::string, std::string>> afterHello = {
      {"field past the payload", frameOf(Encoder().u8(2).u32(1000).payload() + "abc")},
      {"unknown opcode", frameOf(Encoder().u8(200).payload())},
      {"absurd list count", frameOf(Encoder().u8(7).u32(0x7fffffff).payload())},
      {"trailing bytes", frameOf(Encoder().u8(9).payload() + "junk")},
      {"second hello", frameOf(Encoder().u8(1).u32(detail::kMagic).u32(1).u8(0).payload())},
  };
  for (const auto& [what, bytes] : afterHello) {
    RawClient c(server.port());
    c.hello();
    c.send(bytes);
    EXPECT_TRUE(c.closedByServer()) << what;
    EXPECT_EQ(server.droppedClients(), ++expectedDrops) << what;
    expectServing(server.port());
  }
  EXPECT_FALSE(idle.closedByServer(milliseconds(50))) << "the idle client was not at fault";
}

TEST(TCPStoreRobustnessTest, DisconnectsMidRequestAreSurvived) {
  TCPStoreServer server(0);
  {
    RawClient truncated(server.port());
    truncated.hello();
    truncated.send(std::string("\x40\x00\x00\x00\x02\x01", 6));  // 64-byte frame, 2 sent
    truncated.close();
  }
  {
    RawClient parked(server.port());
    parked.hello();
    parked.send(Encoder().u8(6).strList({"never"}).i64(60000).frame());  // wait
    parked.close();
  }
  expectServing(server.port());
  // The truncated one is an error; leaving while parked is not the client's fault.
  TCPStore probe(TCPStoreOptions{.host = "127.0.0.1", .port = server.port()});
  probe.setString("never", "set");  // would answer the dead waiter if it were still parked
  expectServing(server.port());
  EXPECT_GE(server.droppedClients(), 1);
}

TEST(TCPStoreRobustnessTest, RequestsSentBeforeClosingAreServed) {
  // A rank may publish a key and exit before reading the reply (or be killed
  // then): the key is kept, and leaving is not an error.
  TCPStoreServer server(0);
  {
    RawClient c(server.port());
    c.hello();
    c.send(Encoder().u8(2).str("published").bytes(Bytes{'v'}).frame() +
           Encoder().u8(4).str("counter").i64(5).frame());
    c.close();
  }
  TCPStore probe(TCPStoreOptions{.host = "127.0.0.1", .port = server.port()});
  EXPECT_EQ(probe.getString("published"), "v");
  EXPECT_EQ(probe.add("counter", 0), 5);
  EXPECT_EQ(server.droppedClients(), 0);
}

RC_GTEST_PROP(TCPStoreRobustnessTest, RandomBytesNeverBreakTheServer,
              (const std::vector<std::string>& chunks, bool sayHello)) {
  static TCPStoreServer server(0);
  {
    RawClient c(server.port());
    if (sayHello) c.hello();
    for (const auto& chunk : chunks) {
      // Frame some chunks correctly so they reach the request decoder.
      std::string bytes = chunk.size() % 2 == 0 ? frameOf(chunk) : chunk;
      // The server may already have dropped us: stop sending then.
      if (!bytes.empty() && !c.trySend(bytes)) break;
    }
  }
  TCPStore store(TCPStoreOptions{.host = "127.0.0.1", .port = server.port(),
                                 .timeout = milliseconds(5000)});
  store.setString("still", "here");
  RC_ASSERT(store.getString("still") == "here");
}

}  // namespace
}  // namespace distlab::comm
