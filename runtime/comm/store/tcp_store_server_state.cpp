#include "runtime/comm/store/tcp_store_server_state.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "runtime/core/errors.hpp"

namespace distlab::comm::detail {
namespace {

Encoder ok() {
  Encoder e;
  e.u8(static_cast<uint8_t>(Status::kOk));
  return e;
}

Encoder error(const std::string& message) {
  Encoder e;
  e.u8(static_cast<uint8_t>(Status::kError)).str(message);
  return e;
}

// Ten years: long enough to mean "no timeout", short enough not to overflow.
constexpr int64_t kMaxTimeoutMs = int64_t{10} * 365 * 24 * 3600 * 1000;

std::string tooLargeMessage(const char* what, size_t bytes) {
  return fmt::format("{} of {} bytes exceeds the TCP store's message limit of {} bytes; request "
                     "fewer or smaller values per call", what, bytes, kMaxFrameBytes);
}

// The payload size of a multiGet reply: status, count, then each value with
// its length.
size_t multiGetReplyBytes(const KvState& kv, const std::vector<std::string>& keys) {
  size_t total = 1 + 4;
  for (const auto& key : keys) total += 4 + kv.find(key)->size();
  return total;
}

}  // namespace

void appendReply(ServerClient& client, const Encoder& reply) {
  if (reply.payload().size() > kMaxFrameBytes) {
    client.appendOut(error(tooLargeMessage("the reply", reply.payload().size())).frame());
    return;
  }
  client.appendOut(reply.frame());
}

void ServerState::handle(ServerClient& client, const char* data, size_t size) {
  Decoder d(data, size);
  auto op = static_cast<Op>(d.u8());
  if (!client.hello) {
    if (op != Op::kHello) throw ProtocolError("the first request must be a hello handshake");
    handleHello(client, d);
    return;
  }
  handleData(client, op, d);
}

void ServerState::handleHello(ServerClient& client, Decoder& d) {
  uint32_t magic = d.u32();
  uint32_t version = d.u32();
  uint8_t countsAsWorker = d.u8();
  d.finish();
  if (magic != kMagic) throw ProtocolError(fmt::format("bad magic 0x{:08x}", magic));
  if (version != kVersion) {
    throw ProtocolError(fmt::format("protocol version {} (server speaks {})", version, kVersion));
  }
  client.hello = true;
  if (countsAsWorker != 0) ++workers_;
  appendReply(client, ok());
}

void ServerState::handleData(ServerClient& client, Op op, Decoder& d) {
  switch (op) {
    case Op::kSet: {
      std::string key = d.str();
      Bytes value = d.bytes();
      d.finish();
      kv_.set(key, std::move(value));
      appendReply(client, ok());
      return;
    }
    case Op::kMultiGet:
    case Op::kWait: {
      std::vector<std::string> keys = d.strList();
      int64_t timeoutMs = d.i64();
      d.finish();
      park(client, op, std::move(keys), 0, timeoutMs);
      return;
    }
    case Op::kAdd: {
      std::string key = d.str();
      int64_t delta = d.i64();
      d.finish();
      try {
        int64_t value = kv_.add(key, delta);
        appendReply(client, ok().i64(value));
      } catch (const DistStoreError& e) {
        appendReply(client, error(e.what()));
      }
      return;
    }
    case Op::kCompareSet: {
      std::string key = d.str();
      Bytes expected = d.bytes();
      Bytes desired = d.bytes();
      d.finish();
      appendReply(client, ok().bytes(kv_.compareSet(key, expected, desired)));
      return;
    }
    case Op::kCheck: {
      std::vector<std::string> keys = d.strList();
      d.finish();
      appendReply(client, ok().u8(kv_.containsAll(keys) ? 1 : 0));
      return;
    }
    case Op::kDelete: {
      std::string key = d.str();
      d.finish();
      appendReply(client, ok().u8(kv_.erase(key) ? 1 : 0));
      return;
    }
    case Op::kNumKeys:
      d.finish();
      appendReply(client, ok().i64(kv_.size()));
      return;
    case Op::kAppend: {
      std::string key = d.str();
      Bytes value = d.bytes();
      d.finish();
      kv_.append(key, value);
      appendReply(client, ok());
      return;
    }
    case Op::kMultiSet: {
      std::vector<std::string> keys = d.strList();
      std::vector<Bytes> values = d.bytesList();
      d.finish();
      if (keys.size() != values.size()) {
        appendReply(client, error(fmt::format("multiSet: {} keys but {} values", keys.size(),
                                              values.size())));
        return;
      }
      for (size_t i = 0; i < keys.size(); ++i) kv_.set(keys[i], std::move(values[i]));
      appendReply(client, ok());
      return;
    }
    case Op::kWaitWorkers: {
      int64_t count = d.i64();
      int64_t timeoutMs = d.i64();
      d.finish();
      park(client, op, {}, count, timeoutMs);
      return;
    }
    case Op::kPing:
      d.finish();
      appendReply(client, ok());
      return;
    case Op::kHello:
      throw ProtocolError("a second hello on one connection");
  }
  throw ProtocolError(fmt::format("unknown opcode {}", static_cast<int>(op)));
}

void ServerState::park(ServerClient& client, Op op, std::vector<std::string> keys,
                       int64_t workers, int64_t timeoutMs) {
  Waiter w;
  w.client = client.id;
  w.op = op;
  w.keys = std::move(keys);
  w.workers = workers;
  w.deadline = Deadline::after(std::chrono::milliseconds(std::clamp<int64_t>(timeoutMs, 0,
                                                                             kMaxTimeoutMs)));
  if (satisfied(w)) {
    answer(client, w, true);
    return;
  }
  client.parked = true;
  waiters_.push_back(std::move(w));
}

bool ServerState::satisfied(const Waiter& w) const {
  if (w.op == Op::kWaitWorkers) return workers_ >= w.workers;
  return kv_.containsAll(w.keys);
}

void ServerState::answer(ServerClient& client, const Waiter& w, bool isOk) {
  if (!isOk) {
    Encoder e;
    e.u8(static_cast<uint8_t>(Status::kTimeout));
    if (w.op == Op::kWaitWorkers) {
      e.i64(workers_);
    } else {
      e.strList(kv_.missing(w.keys));
    }
    appendReply(client, e);
    return;
  }
  Encoder e = ok();
  if (w.op == Op::kMultiGet) {
    // Checked before the reply is built: never hold a copy of values that
    // cannot be sent.
    size_t bytes = multiGetReplyBytes(kv_, w.keys);
    if (bytes > kMaxFrameBytes) {
      std::string what = fmt::format("the reply to get of {} key(s) [{}{}]", w.keys.size(),
                                     w.keys.front(), w.keys.size() > 1 ? ", ..." : "");
      appendReply(client, error(tooLargeMessage(what.c_str(), bytes)));
      return;
    }
    std::vector<Bytes> values;
    values.reserve(w.keys.size());
    for (const auto& key : w.keys) values.push_back(*kv_.find(key));
    e.bytesList(values);
  }
  appendReply(client, e);
}

void ServerState::dropClient(uint64_t id) {
  waiters_.remove_if([id](const Waiter& w) { return w.client == id; });
}

std::optional<Clock::time_point> ServerState::nextDeadline() const {
  std::optional<Clock::time_point> next;
  for (const auto& w : waiters_) {
    if (!next || w.deadline.at() < *next) next = w.deadline.at();
  }
  return next;
}

}  // namespace distlab::comm::detail
