// The TCP store server cannot be knocked over by a client (Note [Buffer
// caps], Note [Accept back-off]): an oversized deferred reply fails only that
// request, a client that never reads or stalls half-way through a frame is
// dropped with the server's memory bounded, and at the open-file limit the
// server backs off instead of spinning.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <future>
#include <thread>

#include "runtime/comm/store/tcp_store.hpp"
#include "runtime/comm/store/tcp_store_server.hpp"
#include "tests/store/tcp_store_raw_client.hpp"

namespace distlab::comm {
namespace {

using detail::Encoder;
using detail::Op;
using std::chrono::milliseconds;
using testing::expectServing;
using testing::frameHeader;
using testing::RawClient;
using testing::waitUntil;

constexpr size_t kMiB = size_t{1} << 20;

Encoder request(Op op) {
  Encoder e;
  e.u8(static_cast<uint8_t>(op));
  return e;
}

TEST(TCPStoreLimitsTest, OversizedDeferredMultiGetFailsOnlyThatRequest) {
  TCPStoreServer server(0);
  RawClient waiter(server.port());
  waiter.hello();
  waiter.send(request(Op::kMultiGet).strList({"big/a", "big/b"}).i64(60000).frame());
  // The reply is deferred: the keys arrive after the request is parked.
  ASSERT_TRUE(waitUntil([&] { return server.waitingRequests() == 1; }));
  TCPStore setter(TCPStoreOptions{.host = "127.0.0.1", .port = server.port()});
  Bytes value(33 * kMiB, 7);  // two of them pass the 64 MiB frame limit
  setter.set("big/a", value);
  setter.set("big/b", value);

  std::string reply = waiter.readReply();
  ASSERT_EQ(reply[0], static_cast<char>(detail::Status::kError));
  std::string message = detail::Decoder(reply.data() + 1, reply.size() - 1).str();
  EXPECT_NE(message.find("exceeds the TCP store's message limit"), std::string::npos) << message;
  EXPECT_NE(message.find("big/a"), std::string::npos) << message;
  // The same connection, the server and the other clients go on.
  waiter.send(request(Op::kPing).frame());
  EXPECT_EQ(waiter.readReply(), std::string(1, '\0'));
  expectServing(server.port());
  EXPECT_EQ(setter.get("big/b").size(), value.size());
  try {
    setter.multiGet({"big/a", "big/b"});
    FAIL() << "an immediate oversized multiGet must fail too";
  } catch (const DistStoreError& e) {
    EXPECT_NE(std::string(e.what()).find("message limit"), std::string::npos) << e.what();
  }
  EXPECT_EQ(server.droppedClients(), 0);
}

TEST(TCPStoreLimitsTest, ClientThatNeverReadsIsDroppedWithMemoryBounded) {
  TCPStoreServerOptions o;
  o.maxClientOutputBytes = 1 * kMiB;
  TCPStoreServer server(o);
  TCPStore setter(TCPStoreOptions{.host = "127.0.0.1", .port = server.port()});
  setter.set("v", Bytes(256 << 10, 1));

  RawClient greedy(server.port());
  int small = 4096;  // keep the kernel from absorbing the replies for us
  ::setsockopt(greedy.fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  greedy.hello();
  std::string requests;
  for (int i = 0; i < 200; ++i) {
    requests += request(Op::kMultiGet).strList({"v"}).i64(1000).frame();
  }
  greedy.trySend(requests);  // ~4 KB asking for 50 MiB of replies
  // Nothing here reads the replies; the server must drop us (closedByServer
  // only reads after the server has decided).
  ASSERT_TRUE(waitUntil([&] { return server.droppedClients() == 1; }));
  EXPECT_TRUE(greedy.closedByServer());
  EXPECT_LE(server.peakBufferedBytes(), static_cast<int64_t>(o.maxClientOutputBytes + 64 * 1024))
      << "the output cap bounds what one client can make the server hold";
  EXPECT_TRUE(waitUntil([&] { return server.bufferedBytes() == 0; }));
  expectServing(server.port());
}

TEST(TCPStoreLimitsTest, HugeFramesAreRefusedBeforeTheHandshakeAndCappedAfter) {
  TCPStoreServerOptions o;
  o.maxClientOutputBytes = 1 * kMiB;
  o.maxTotalBufferedBytes = 8 * kMiB;
  TCPStoreServer server(o);
  std::string oneMiB(kMiB, 'x');
  for (int i = 0; i < 3; ++i) {
    RawClient early(server.port());
    early.trySend(frameHeader(60 * kMiB) + oneMiB);
    EXPECT_TRUE(early.closedByServer()) << "a 60 MiB frame before the handshake";
  }
  EXPECT_EQ(server.droppedClients(), 3);
  EXPECT_LE(server.peakBufferedBytes(),
            static_cast<int64_t>(TCPStoreServerOptions::kMaxHandshakeInputBytes));

  // Two half-sent 60 MiB frames after the handshake fit the total cap ...
  RawClient a(server.port()), b(server.port());
  a.hello();
  b.hello();
  ASSERT_TRUE(a.trySend(frameHeader(60 * kMiB) + std::string(3 * kMiB, 'a')));
  ASSERT_TRUE(b.trySend(frameHeader(60 * kMiB) + std::string(3 * kMiB, 'b')));
  ASSERT_TRUE(waitUntil([&] { return server.bufferedBytes() >= int64_t(6 * kMiB); }));
  // ... a third passes it and is the one dropped.
  RawClient c(server.port());
  c.hello();
  c.trySend(frameHeader(60 * kMiB) + std::string(3 * kMiB, 'c'));
  EXPECT_TRUE(c.closedByServer());
  EXPECT_EQ(server.droppedClients(), 4);
  EXPECT_LE(server.peakBufferedBytes(), static_cast<int64_t>(o.maxTotalBufferedBytes));
  expectServing(server.port());
  // The probe's connection closes on its own time; a and b stay.
  EXPECT_TRUE(waitUntil([&] { return server.connectedClients() == 2; }))
      << "a and b were within the caps";
  EXPECT_FALSE(a.closedByServer(milliseconds(50)));
}

TEST(TCPStoreLimitsTest, IdlePartialFramesTimeOut) {
  TCPStoreServerOptions o;
  o.partialFrameTimeout = milliseconds(200);
  TCPStoreServer server(o);
  RawClient quiet(server.port());  // handshake done, nothing pending: never timed out
  quiet.hello();
  std::vector<std::unique_ptr<RawClient>> stalled;
  for (int i = 0; i < 3; ++i) {
    stalled.push_back(std::make_unique<RawClient>(server.port()));
    stalled.back()->hello();
    stalled.back()->send(frameHeader(60 * kMiB) + std::string(kMiB, 's'));
  }
  stalled.push_back(std::make_unique<RawClient>(server.port()));
  stalled.back()->send(std::string("\x0e\x00", 2));  // half a hello header
  // A parked client whose next request is complete and buffered is not
  // stalled: it must neither be dropped nor make the loop spin.
  RawClient pipelined(server.port());
  pipelined.hello();
  pipelined.send(request(Op::kWait).strList({"never"}).i64(60000).frame() +
                 request(Op::kPing).frame());
  Stopwatch watch;
  for (auto& c : stalled) EXPECT_TRUE(c->closedByServer());
  EXPECT_GE(watch.elapsed(), milliseconds(150)) << "dropped for the timeout, not before";
  EXPECT_EQ(server.droppedClients(), 4);
  // What is left is the pipelined ping, waiting behind its parked wait.
  const auto pingBytes = static_cast<int64_t>(request(Op::kPing).frame().size());
  EXPECT_TRUE(waitUntil([&] { return server.bufferedBytes() == pingBytes; }))
      << server.bufferedBytes();
  // A measurement window, not synchronisation: the loop's CPU use over it.
  auto cpuBefore = server.loopCpuTime();
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_LT(server.loopCpuTime() - cpuBefore, milliseconds(30)) << "the loop spins";
  EXPECT_FALSE(pipelined.closedByServer(milliseconds(10)));
  expectServing(server.port());
  quiet.send(request(Op::kPing).frame());
  EXPECT_EQ(quiet.readReply(), std::string(1, '\0'));
}

TEST(TCPStoreLimitsTest, BadServerOptionsAreValueErrors) {
  EXPECT_THROW(TCPStoreServer(TCPStoreServerOptions{.bindAddress = "not-an-ip"}), ValueError);
  EXPECT_THROW(TCPStoreServer(TCPStoreServerOptions{.maxClientInputBytes = 16}), ValueError);
  EXPECT_THROW(TCPStoreServer(TCPStoreServerOptions{.partialFrameTimeout = milliseconds(0)}),
               ValueError);
}

}  // namespace
}  // namespace distlab::comm
