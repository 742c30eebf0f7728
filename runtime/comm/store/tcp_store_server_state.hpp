#pragma once
// The TCP store server's request handling, separate from its sockets: the
// key-value state, the worker count, and the parked waiters. Runs only on the
// server's event-loop thread (not thread-safe).
//
// Note [Parked waiters]: a blocking request whose keys are missing does not
// block the loop; the client is parked (the loop stops reading requests from
// it) with a deadline. After every round of requests the loop calls
// serviceWaiters(), which answers every waiter whose keys now exist (or whose
// worker count is reached) and answers kTimeout to every waiter past its
// deadline, then unparks those clients so their buffered requests run.
#include <cstdint>
#include <exception>
#include <list>
#include <optional>
#include <string>
#include <vector>

#include "runtime/comm/store/kv_state.hpp"
#include "runtime/comm/store/tcp_store_protocol.hpp"
#include "runtime/comm/store/tcp_store_server_client.hpp"
#include "runtime/core/clock.hpp"

namespace distlab::comm::detail {


class ServerState {
 public:
  // Handles one request payload from `client`: appends the reply frame to
  // its output, or parks the client. Throws ProtocolError on malformed input.
  // A refused append (a cap, see ServerClient) leaves client.dropReason() set.
  void handle(ServerClient& client, const char* data, size_t size);
  // Answers satisfied and expired waiters (Note [Parked waiters]). `lookup`
  // maps a client id to its (live) record. Returns the unparked clients.
  template <typename Lookup>
  std::vector<ServerClient*> serviceWaiters(Lookup lookup);
  // Forgets the waiters of a client that went away.
  void dropClient(uint64_t id);
  // The earliest waiter deadline, if any.
  std::optional<Clock::time_point> nextDeadline() const;
  int64_t numKeys() const { return kv_.size(); }
  int64_t numWaiters() const { return static_cast<int64_t>(waiters_.size()); }

 private:
  struct Waiter {
    uint64_t client = 0;
    Op op = Op::kWait;
    std::vector<std::string> keys;
    int64_t workers = 0;
    Deadline deadline{Clock::time_point{}};
  };

  bool satisfied(const Waiter& w) const;
  // Appends the answer for a satisfied waiter (ok) or an expired one (timeout).
  void answer(ServerClient& client, const Waiter& w, bool ok);
  void park(ServerClient& client, Op op, std::vector<std::string> keys, int64_t workers,
            int64_t timeoutMs);
  void handleHello(ServerClient& client, Decoder& d);
  void handleData(ServerClient& client, Op op, Decoder& d);

  KvState kv_;
  int64_t workers_ = 0;
  std::list<Waiter> waiters_;
};

template <typename Lookup>
std::vector<ServerClient*> ServerState::serviceWaiters(Lookup lookup) {
  std::vector<ServerClient*> unparked;
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    bool ok = satisfied(*it);
    if (!ok && !it->deadline.expired()) {
      ++it;
      continue;
    }
    ServerClient* client = lookup(it->client);
    if (client != nullptr && !client->dead) {
      try {
        answer(*client, *it, ok);
      } catch (const std::exception& e) {  // e.g. out of memory: this client only
        client->fail(std::string("answering its parked request failed: ") + e.what());
      }
      client->parked = false;
      unparked.push_back(client);
    }
    it = waiters_.erase(it);
  }
  return unparked;
}

// Appends `reply` as a frame to the client's output. A reply larger than
// kMaxFrameBytes is replaced by an error reply saying so (the request fails,
// the client and the server go on).
void appendReply(ServerClient& client, const Encoder& reply);

}  // namespace distlab::comm::detail
