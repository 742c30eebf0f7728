// At the process's open-file limit the TCP store server backs off instead of
// spinning on a listening socket it cannot accept from (Note [Accept
// back-off]), logs the condition once instead of flooding, and serves the
// queued clients once descriptors free up.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "runtime/comm/store/tcp_store_server.hpp"
#include "tests/store/tcp_store_raw_client.hpp"

namespace distlab::comm {
namespace {

using std::chrono::milliseconds;
using testing::waitUntil;

// Sends stderr to a memory file while alive; text() reads what was written.
class StderrCapture {
 public:
  StderrCapture() : mem_(::memfd_create("store-log", MFD_CLOEXEC)), saved_(::dup(2)) {
    EXPECT_GE(mem_, 0);
    EXPECT_GE(saved_, 0);
    ::dup2(mem_, 2);
  }
  ~StderrCapture() {
    restore();
    if (::testing::Test::HasFailure()) std::fprintf(stderr, "captured log:\n%s", text().c_str());
    ::close(mem_);
  }
  void restore() {
    if (saved_ < 0) return;
    ::dup2(saved_, 2);
    ::close(saved_);
    saved_ = -1;
  }
  std::string text() const {
    std::string out(static_cast<size_t>(::lseek(mem_, 0, SEEK_END)), '\0');
    ssize_t n = ::pread(mem_, out.data(), out.size(), 0);
    out.resize(n > 0 ? static_cast<size_t>(n) : 0);
    return out;
  }

 private:
  int mem_;
  int saved_;
};

// Lowers RLIMIT_NOFILE so that only `spare` more descriptors fit, and puts
// the old limit back (and closes the sockets it made) when destroyed.
class FdLimit {
 public:
  explicit FdLimit(int spare) {
    ::getrlimit(RLIMIT_NOFILE, &old_);
    int highest = 0;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
      highest = std::max(highest, std::stoi(e.path().filename().string()));
    }
    rlimit lowered = old_;
    lowered.rlim_cur = static_cast<rlim_t>(highest + 1 + spare);
    EXPECT_EQ(::setrlimit(RLIMIT_NOFILE, &lowered), 0);
  }
  ~FdLimit() {
    for (int fd : sockets) ::close(fd);
    ::setrlimit(RLIMIT_NOFILE, &old_);
  }
  std::vector<int> sockets;

 private:
  rlimit old_{};
};

TEST(TCPStoreFdLimitTest, ServerBacksOffAtTheFdLimitAndRecovers) {
  TCPStoreServerOptions o;
  o.acceptRetryInterval = milliseconds(20);
  TCPStoreServer server(o);
  StderrCapture log;
  {
    FdLimit limit(24);
    // Take every descriptor left, then connect: the server has none to accept with.
    while (true) {
      int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
      if (fd < 0) {
        ASSERT_EQ(errno, EMFILE);
        break;
      }
      limit.sockets.push_back(fd);
    }
    ASSERT_GE(limit.sockets.size(), 16u);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(server.port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int fd : limit.sockets) {
      int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
      ASSERT_TRUE(rc == 0 || errno == EINPROGRESS) << std::strerror(errno);
    }
    ASSERT_TRUE(waitUntil([&] { return server.acceptPauses() >= 1; }));

    // A measurement window, not synchronisation: the loop's CPU use over it.
    constexpr milliseconds kWindow(500);
    auto cpuBefore = server.loopCpuTime();
    std::this_thread::sleep_for(kWindow);
    auto cpu = server.loopCpuTime() - cpuBefore;
    EXPECT_LT(cpu, kWindow / 10) << "the accept loop spins at the fd limit";
    ::testing::Test::RecordProperty(
        "loop_cpu_us_per_500ms",
        std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(cpu).count()));

    // Free half the descriptors: the queued clients are accepted and served.
    size_t half = limit.sockets.size() / 2;
    for (size_t i = 0; i < half; ++i) ::close(limit.sockets[i]);
    limit.sockets.erase(limit.sockets.begin(), limit.sockets.begin() + half);
    // The first live connection is next in the accept queue; the last may
    // still find no descriptor (the server holds one per live client).
    int live = limit.sockets.front();
    detail::Encoder hello;
    hello.u8(static_cast<uint8_t>(detail::Op::kHello)).u32(detail::kMagic).u32(detail::kVersion)
        .u8(0);
    std::string frame = hello.frame();
    Deadline deadline = Deadline::after(milliseconds(5000));
    ASSERT_TRUE(detail::sendAll(live, frame.data(), frame.size(), deadline));
    char reply[5];
    ASSERT_TRUE(detail::recvExact(live, reply, 5, deadline)) << "a queued client is served";
    EXPECT_EQ(reply[4], 0);
  }
  log.restore();
  std::string text = log.text();
  auto count = [&text](const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  // Well inside one log interval: one failure line, at most one recovery line,
  // however often the limit was hit.
  EXPECT_EQ(count("cannot accept"), 1u) << "log was:\n" << text.substr(0, 2000);
  EXPECT_LE(count("accepting connections again"), 1u) << text.substr(0, 2000);
  EXPECT_GE(server.acceptPauses(), 1);
}

}  // namespace
}  // namespace distlab::comm
