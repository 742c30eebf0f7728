#pragma once
// Wire format of the TCP store.
//
// Note [TCP store protocol]: every message is a frame, a little-endian u32
// payload length followed by the payload. A request payload is an opcode byte
// and its fields; a response payload is a status byte and its fields. Fields:
// u8, i64 (little-endian), bytes/string (u32 length + data), lists (u32 count
// + items). A client's first request must be kHello with kMagic and
// kVersion. Payloads are limited to kMaxFrameBytes; anything else (unknown
// opcode, field running past the payload, bytes left over, oversized or
// empty frame) is malformed, and the server drops that client.
//
// Blocking requests (kGet, kMultiGet, kWait, kWaitWorkers) carry their
// timeout; the server parks the client and answers kTimeout itself when it
// passes, so a client's stream never holds a stale reply.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/comm/store/store.hpp"

namespace distlab::comm::detail {

constexpr uint32_t kMagic = 0x444c5354;  // "DLST"
constexpr uint32_t kVersion = 1;
constexpr uint32_t kMaxFrameBytes = 64u << 20;

enum class Op : uint8_t {
  kHello = 1,        // u32 magic, u32 version, u8 countsAsWorker -> ok
  kSet = 2,          // key, value -> ok
  kMultiGet = 3,     // keys, i64 timeoutMs -> ok values | timeout missing
  kAdd = 4,          // key, i64 delta -> ok i64 | error msg
  kCompareSet = 5,   // key, expected, desired -> ok value
  kWait = 6,         // keys, i64 timeoutMs -> ok | timeout missing
  kCheck = 7,        // keys -> ok u8
  kDelete = 8,       // key -> ok u8
  kNumKeys = 9,      // -> ok i64
  kAppend = 10,      // key, value -> ok
  kMultiSet = 11,    // keys, values -> ok
  kWaitWorkers = 12, // i64 count, i64 timeoutMs -> ok | timeout (i64 joined)
  kPing = 13,        // -> ok
};

enum class Status : uint8_t { kOk = 0, kError = 1, kTimeout = 2 };

// A malformed payload (the server drops the client; a client treats it as a
// broken connection).
class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Encoder {
 public:
  Encoder& u8(uint8_t v);
  Encoder& u32(uint32_t v);
  Encoder& i64(int64_t v);
  Encoder& str(const std::string& s);
  Encoder& bytes(const Bytes& b);
  Encoder& strList(const std::vector<std::string>& list);
  Encoder& bytesList(const std::vector<Bytes>& list);
  // The payload with its u32 length prefix.
  std::string frame() const;
  const std::string& payload() const { return buf_; }

 private:
  std::string buf_;
};

class Decoder {
 public:
  Decoder(const char* data, size_t size) : p_(data), end_(data + size) {}
  uint8_t u8();
  uint32_t u32();
  int64_t i64();
  std::string str();
  Bytes bytes();
  std::vector<std::string> strList();
  std::vector<Bytes> bytesList();
  // Throws ProtocolError when bytes are left over.
  void finish() const;

 private:
  const char* take(size_t n);

  const char* p_;
  const char* end_;
};

const char* opName(Op op);

}  // namespace distlab::comm::detail
