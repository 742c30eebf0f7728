#pragma once
// ServerClient: one connection's record on the TCP store server's loop thread.
// Its input and output buffers are held against the per-client caps and the
// server-wide total of Note [Buffer caps] (tcp_store_server.hpp): an append
// that would pass a cap is refused and names the cap, and the loop drops the
// client. Loop thread only, except the counters BufferLedger publishes.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/core/clock.hpp"

namespace distlab::comm::detail {

// The bytes buffered across all clients of one server. It publishes the total
// and its high-water mark to atomics that any thread may read.
class BufferLedger {
 public:
  BufferLedger(size_t limit, std::atomic<int64_t>& total, std::atomic<int64_t>& peak)
      : limit_(limit), total_(total), peak_(peak) {}
  bool fits(size_t more) const { return more <= limit_ - held_; }
  void add(size_t n);
  void sub(size_t n);
  size_t limit() const { return limit_; }

 private:
  size_t limit_;
  size_t held_ = 0;  // never above limit_
  std::atomic<int64_t>& total_;
  std::atomic<int64_t>& peak_;
};

struct ClientCaps {
  size_t input = 0;           // after the handshake
  size_t handshakeInput = 0;  // before it
  size_t output = 0;
};

class ServerClient {
 public:
  ServerClient(uint64_t id, int fd, std::string peer, const ClientCaps& caps,
               BufferLedger& ledger);
  ~ServerClient();  // returns its bytes to the ledger
  ServerClient(const ServerClient&) = delete;
  ServerClient& operator=(const ServerClient&) = delete;

  const uint64_t id;
  const int fd;
  const std::string peer;  // "ip:port" for log lines
  bool hello = false;      // the handshake succeeded
  bool parked = false;     // a blocking request is pending (Note [Parked waiters])
  bool dead = false;       // to be closed at the end of this loop round
  bool closedByPeer = false;  // EOF read: requests still served, replies discarded
  Clock::time_point lastInput = Clock::now();  // when bytes last arrived

  const std::string& in() const { return in_; }    // bytes received, not yet handled
  const std::string& out() const { return out_; }  // bytes to send
  // Appends, or refuses (returns false, appends nothing, sets dropReason())
  // when a per-client cap or the server-wide total would be passed.
  bool appendIn(const char* data, size_t size);
  bool appendOut(const std::string& bytes);
  void consumeIn(size_t size);
  void consumeOut(size_t size);
  // Why the loop must drop this client (the cap a refused append would have
  // passed, or a failure while answering it); empty when it need not.
  const std::string& dropReason() const { return dropReason_; }
  void fail(std::string reason) {
    if (dropReason_.empty()) dropReason_ = std::move(reason);
  }
  // True when the input ends in an incomplete frame (header or payload).
  bool partialFrame() const;

 private:
  bool admit(size_t have, size_t more, size_t cap, const char* capName);

  std::string in_;
  std::string out_;
  std::string dropReason_;
  const ClientCaps& caps_;
  BufferLedger& ledger_;
};

}  // namespace distlab::comm::detail
