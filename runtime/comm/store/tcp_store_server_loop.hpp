#pragma once
// The TCP store server's event loop (private to tcp_store_server*.cpp): one
// thread polls the listening socket, a wake-up pipe and every client, reads
// and answers requests, and closes clients marked dead at the end of each
// round. tcp_store_server.cpp holds the loop and accepting,
// tcp_store_server_io.cpp a client's reads, writes and requests.
//
// Note [Accept back-off]: accept() fails with EMFILE/ENFILE (or ENOBUFS,
// ENOMEM) while the pending connection stays queued, so the listening socket
// stays readable and a loop that keeps polling it spins at 100% CPU. On such
// a failure the loop stops polling the listening socket for
// acceptRetryInterval, or until it closes a client of its own (which frees a
// descriptor), whichever comes first. Queued clients wait in the kernel's
// backlog meanwhile. The failure is logged at most every kAcceptLogInterval
// (10 s), with the count of failures since the last line, and the recovery
// once after a logged failure: at most two lines per interval however the
// limit flaps.
#include <poll.h>

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/comm/store/socket.hpp"
#include "runtime/comm/store/tcp_store_server.hpp"
#include "runtime/comm/store/tcp_store_server_state.hpp"
#include "runtime/core/clock.hpp"

namespace distlab::comm {

class TCPStoreServer::Loop {
 public:
  Loop(TCPStoreServer& owner, detail::Socket listener);
  ~Loop();
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  // Wakes the loop and makes run() return.
  void stop();
  void run();

 private:
  using ServerClient = detail::ServerClient;

  void pollOnce();
  int pollTimeoutMs() const;
  void serve(ServerClient& c, short revents);
  void acceptAll();
  void addClient(int fd, const std::string& peer);
  void pauseAccepting(int err);
  void readFrom(ServerClient& c);
  void flush(ServerClient& c);
  void processFrames(ServerClient& c);
  void handleReadyClients();
  void expireIdleClients();
  void drop(ServerClient& c, const std::string& reason, bool isError);
  void sweep();

  TCPStoreServer& owner_;
  const TCPStoreServerOptions& options_;
  detail::Socket listener_;
  int wake_[2] = {-1, -1};
  std::atomic<bool> stop_{false};
  detail::ClientCaps caps_;
  detail::BufferLedger ledger_;
  uint64_t nextId_ = 1;
  std::map<uint64_t, std::unique_ptr<ServerClient>> clients_;
  std::vector<pollfd> fds_;
  std::vector<uint64_t> fdOwner_;
  detail::ServerState state_;
  // Note [Accept back-off]
  std::optional<Clock::time_point> acceptPausedUntil_;
  int64_t acceptFailures_ = 0;  // since the last line about them
  bool failureLogged_ = false;  // a failure line is out, the recovery line not yet
  std::optional<Clock::time_point> lastAcceptLog_;
};

}  // namespace distlab::comm
