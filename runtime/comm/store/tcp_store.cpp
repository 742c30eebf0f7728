#include "runtime/comm/store/tcp_store.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/comm/store/kv_state.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::comm {

using detail::Decoder;
using detail::Encoder;
using detail::Op;
using detail::Status;

namespace {

// How long past a blocking request's own timeout the client waits for the
// server's (timeout) reply before it declares the connection dead.
constexpr std::chrono::milliseconds kReplySlack{10000};
constexpr std::chrono::milliseconds kMinConnectTimeout{5000};

void validate(const TCPStoreOptions& o) {
  if (o.port < 0 || o.port > 65535) {
    throw ValueError(fmt::format("TCPStore: port {} is out of range; use 0..65535", o.port));
  }
  if (o.port == 0 && !o.isMaster) {
    throw ValueError("TCPStore: a client needs the server's port; port 0 (ephemeral) is only "
                     "valid with isMaster");
  }
  if (o.worldSize == 0 || o.worldSize < -1) {
    throw ValueError(fmt::format("TCPStore: worldSize {} is invalid; use a positive count "
                                 "(clients + 1 for the master) or -1 for a non-fixed size",
                                 o.worldSize));
  }
  if (o.timeout.count() < 0) throw ValueError("TCPStore: timeout must not be negative");
  if (o.host.empty()) throw ValueError("TCPStore: host is empty; give the server's address");
}

Encoder request(Op op) {
  Encoder e;
  e.u8(static_cast<uint8_t>(op));
  return e;
}

}  // namespace

TCPStore::TCPStore(TCPStoreOptions options)
    : Store(options.timeout), options_(std::move(options)), port_(options_.port) {
  validate(options_);
  if (options_.isMaster) {
    server_ = std::make_unique<TCPStoreServer>(TCPStoreServerOptions{
        .port = options_.port, .bindAddress = storeBindAddress(options_.host)});
    port_ = server_->port();
  }
  try {
    idle_.push_back(std::make_unique<Connection>(options_.host, port_, /*countsAsWorker=*/true,
                                                 Deadline::after(timeout())));
  } catch (const DistError& e) {
    throw DistNetworkError(fmt::format("{}: cannot reach the server: {}", name(), e.what()));
  }
  if (options_.isMaster && options_.worldSize > 0 && options_.waitForWorkers) waitForWorkers();
}

TCPStore::~TCPStore() = default;

std::string TCPStore::name() const { return fmt::format("TCPStore {}:{}", options_.host, port_); }

std::unique_ptr<TCPStore::Connection> TCPStore::acquire() {
  {
    std::lock_guard<std::mutex> lock(poolMutex_);
    if (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      return c;
    }
  }
  // A short store timeout (tests use a few ms) must not make growing the pool
  // fail on a busy machine: connecting gets at least kMinConnectTimeout.
  return std::make_unique<Connection>(options_.host, port_, /*countsAsWorker=*/false,
                                      Deadline::after(std::max(timeout(), kMinConnectTimeout)));
}

void TCPStore::release(std::unique_ptr<Connection> connection) {
  if (connection->broken()) return;
  std::lock_guard<std::mutex> lock(poolMutex_);
  idle_.push_back(std::move(connection));
}

std::string TCPStore::call(const Encoder& req, std::chrono::milliseconds serverWait,
                           const char* op, const std::vector<std::string>& keys) {
  std::string reply;
  try {
    auto connection = acquire();
    reply = connection->roundTrip(req, Deadline::after(serverWait + kReplySlack));
    release(std::move(connection));
  } catch (const DistNetworkError& e) {
    throw DistNetworkError(fmt::format("{}: {}({}): {}", name(), op, fmt::join(keys, ", "),
                                       e.what()));
  } catch (const DistStoreError& e) {
    throw DistStoreError(fmt::format("{}: {}({}): {}", name(), op, fmt::join(keys, ", "),
                                     e.what()));
  }
  Decoder d(reply.data(), reply.size());
  auto status = static_cast<Status>(d.u8());
  if (status == Status::kOk) return reply.substr(1);
  if (status == Status::kError) throw DistStoreError(fmt::format("{}: {}", name(), d.str()));
  if (std::string(op) == "waitForWorkers") {
    throw DistStoreError(fmt::format("{}: timed out after {} ms waiting for workers: {} of {} "
                                     "joined", name(), serverWait.count(), d.i64(),
                                     options_.worldSize));
  }
  throw DistStoreError(
      detail::timeoutMessage(name().c_str(), op, d.strList(), serverWait));
}

void TCPStore::waitForWorkers(std::chrono::milliseconds timeout) {
  if (options_.worldSize <= 0) return;
  auto t = resolve(timeout);
  call(request(Op::kWaitWorkers).i64(options_.worldSize).i64(t.count()), t, "waitForWorkers", {});
}

void TCPStore::set(const std::string& key, const Bytes& value) {
  call(request(Op::kSet).str(key).bytes(value), timeout(), "set", {key});
}

Bytes TCPStore::get(const std::string& key) {
  std::string r = call(request(Op::kMultiGet).strList({key}).i64(timeout().count()), timeout(),
                       "get", {key});
  Decoder d(r.data(), r.size());
  auto values = d.bytesList();
  return std::move(values.at(0));
}

int64_t TCPStore::add(const std::string& key, int64_t delta) {
  std::string r = call(request(Op::kAdd).str(key).i64(delta), timeout(), "add", {key});
  return Decoder(r.data(), r.size()).i64();
}

Bytes TCPStore::compareSet(const std::string& key, const Bytes& expected, const Bytes& desired) {
  std::string r = call(request(Op::kCompareSet).str(key).bytes(expected).bytes(desired),
                       timeout(), "compareSet", {key});
  return Decoder(r.data(), r.size()).bytes();
}

void TCPStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  auto t = resolve(timeout);
  call(request(Op::kWait).strList(keys).i64(t.count()), t, "wait", keys);
}

bool TCPStore::check(const std::vector<std::string>& keys) {
  std::string r = call(request(Op::kCheck).strList(keys), timeout(), "check", keys);
  return Decoder(r.data(), r.size()).u8() != 0;
}

bool TCPStore::deleteKey(const std::string& key) {
  std::string r = call(request(Op::kDelete).str(key), timeout(), "deleteKey", {key});
  return Decoder(r.data(), r.size()).u8() != 0;
}

int64_t TCPStore::numKeys() {
  std::string r = call(request(Op::kNumKeys), timeout(), "numKeys", {});
  return Decoder(r.data(), r.size()).i64();
}

void TCPStore::append(const std::string& key, const Bytes& value) {
  call(request(Op::kAppend).str(key).bytes(value), timeout(), "append", {key});
}

std::vector<Bytes> TCPStore::multiGet(const std::vector<std::string>& keys) {
  std::string r = call(request(Op::kMultiGet).strList(keys).i64(timeout().count()), timeout(),
                       "multiGet", keys);
  return Decoder(r.data(), r.size()).bytesList();
}

void TCPStore::multiSet(const std::vector<std::string>& keys, const std::vector<Bytes>& values) {
  if (keys.size() != values.size()) {
    throw ValueError(fmt::format("{}: multiSet: {} keys but {} values; pass one value per key",
                                 name(), keys.size(), values.size()));
  }
  call(request(Op::kMultiSet).strList(keys).bytesList(values), timeout(), "multiSet", keys);
}

}  // namespace distlab::comm
