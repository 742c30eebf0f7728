#include "runtime/comm/store/tcp_store_server_client.hpp"

#include <fmt/format.h>

#include "runtime/comm/store/tcp_store_protocol.hpp"

namespace distlab::comm::detail {
namespace {

// A buffer emptied after holding a large frame gives its memory back.
constexpr size_t kKeepCapacityBytes = size_t{1} << 20;

void consume(std::string& buf, size_t size) {
  buf.erase(0, size);
  if (buf.empty() && buf.capacity() > kKeepCapacityBytes) std::string().swap(buf);
}

}  // namespace

void BufferLedger::add(size_t n) {
  held_ += n;
  total_.store(static_cast<int64_t>(held_));
  if (static_cast<int64_t>(held_) > peak_.load()) peak_.store(static_cast<int64_t>(held_));
}

void BufferLedger::sub(size_t n) {
  held_ -= n;
  total_.store(static_cast<int64_t>(held_));
}

ServerClient::ServerClient(uint64_t id_, int fd_, std::string peer_, const ClientCaps& caps,
                           BufferLedger& ledger)
    : id(id_), fd(fd_), peer(std::move(peer_)), caps_(caps), ledger_(ledger) {}

ServerClient::~ServerClient() { ledger_.sub(in_.size() + out_.size()); }

bool ServerClient::admit(size_t have, size_t more, size_t cap, const char* capName) {
  if (more > cap || have > cap - more) {
    fail(fmt::format("would pass the {} cap of {} bytes", capName, cap));
    return false;
  }
  if (!ledger_.fits(more)) {
    fail(fmt::format("would pass the maxTotalBufferedBytes cap of {} bytes across all clients",
                     ledger_.limit()));
    return false;
  }
  return true;
}

bool ServerClient::appendIn(const char* data, size_t size) {
  size_t cap = hello ? caps_.input : caps_.handshakeInput;
  if (!admit(in_.size(), size, cap, hello ? "maxClientInputBytes" : "kMaxHandshakeInputBytes")) {
    return false;
  }
  in_.append(data, size);
  ledger_.add(size);
  return true;
}

bool ServerClient::appendOut(const std::string& bytes) {
  if (!admit(out_.size(), bytes.size(), caps_.output, "maxClientOutputBytes")) return false;
  out_ += bytes;
  ledger_.add(bytes.size());
  return true;
}

void ServerClient::consumeIn(size_t size) {
  consume(in_, size);
  ledger_.sub(size);
}

void ServerClient::consumeOut(size_t size) {
  consume(out_, size);
  ledger_.sub(size);
}

bool ServerClient::partialFrame() const {
  size_t pos = 0;
  while (in_.size() - pos >= 4) {
    uint32_t len = Decoder(in_.data() + pos, 4).u32();
    if (in_.size() - pos - 4 < len) return true;
    pos += 4 + size_t{len};
  }
  return pos != in_.size();
}

}  // namespace distlab::comm::detail
