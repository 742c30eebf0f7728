#include "runtime/comm/store/tcp_store_protocol.hpp"

#include <cstring>

#include <fmt/format.h>

namespace distlab::comm::detail {

Encoder& Encoder::u8(uint8_t v) {
  buf_.push_back(static_cast<char>(v));
  return *this;
}

Encoder& Encoder::u32(uint32_t v) {
  for (int i = 0; i < 4; ++i) buf_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return *this;
}

Encoder& Encoder::i64(int64_t v) {
  auto u = static_cast<uint64_t>(v);
  for (int i = 0; i < 8; ++i) buf_.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
  return *this;
}

Encoder& Encoder::str(const std::string& s) {
  u32(static_cast<uint32_t>(s.size()));
  buf_.append(s);
  return *this;
}

Encoder& Encoder::bytes(const Bytes& b) {
  u32(static_cast<uint32_t>(b.size()));
  buf_.append(reinterpret_cast<const char*>(b.data()), b.size());
  return *this;
}

Encoder& Encoder::strList(const std::vector<std::string>& list) {
  u32(static_cast<uint32_t>(list.size()));
  for (const auto& s : list) str(s);
  return *this;
}

Encoder& Encoder::bytesList(const std::vector<Bytes>& list) {
  u32(static_cast<uint32_t>(list.size()));
  for (const auto& b : list) bytes(b);
  return *this;
}

std::string Encoder::frame() const {
  if (buf_.size() > kMaxFrameBytes) {
    throw ProtocolError(fmt::format("TCP store message of {} bytes exceeds the {} byte limit",
                                    buf_.size(), kMaxFrameBytes));
  }
  Encoder head;
  head.u32(static_cast<uint32_t>(buf_.size()));
  return head.buf_ + buf_;
}

const char* Decoder::take(size_t n) {
  if (static_cast<size_t>(end_ - p_) < n) {
    throw ProtocolError(fmt::format("truncated field: needs {} bytes, {} left", n, end_ - p_));
  }
  const char* at = p_;
  p_ += n;
  return at;
}

uint8_t Decoder::u8() { return static_cast<uint8_t>(*take(1)); }

uint32_t Decoder::u32() {
  const char* p = take(4);
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

int64_t Decoder::i64() {
  const char* p = take(8);
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return static_cast<int64_t>(v);
}

std::string Decoder::str() {
  uint32_t n = u32();
  const char* p = take(n);
  return std::string(p, n);
}

Bytes Decoder::bytes() {
  uint32_t n = u32();
  const auto* p = reinterpret_cast<const uint8_t*>(take(n));
  return Bytes(p, p + n);
}

std::vector<std::string> Decoder::strList() {
  uint32_t n = u32();
  // Each item needs at least its 4-byte length: reject absurd counts before
  // reserving memory for them.
  if (n > static_cast<size_t>(end_ - p_) / 4) throw ProtocolError("list count exceeds payload");
  std::vector<std::string> out;
  out.reserve(n);
  for (uint32_t i = 0; i < n; ++i) out.push_back(str());
  return out;
}

std::vector<Bytes> Decoder::bytesList() {
  uint32_t n = u32();
  if (n > static_cast<size_t>(end_ - p_) / 4) throw ProtocolError("list count exceeds payload");
  std::vector<Bytes> out;
  out.reserve(n);
  for (uint32_t i = 0; i < n; ++i) out.push_back(bytes());
  return out;
}

void Decoder::finish() const {
  if (p_ != end_) throw ProtocolError(fmt::format("{} unexpected trailing bytes", end_ - p_));
}

const char* opName(Op op) {
  switch (op) {
    case Op::kHello: return "hello";
    case Op::kSet: return "set";
    case Op::kMultiGet: return "get";
    case Op::kAdd: return "add";
    case Op::kCompareSet: return "compareSet";
    case Op::kWait: return "wait";
    case Op::kCheck: return "check";
    case Op::kDelete: return "deleteKey";
    case Op::kNumKeys: return "numKeys";
    case Op::kAppend: return "append";
    case Op::kMultiSet: return "multiSet";
    case Op::kWaitWorkers: return "waitForWorkers";
    case Op::kPing: return "ping";
  }
  return "unknown";
}

}  // namespace distlab::comm::detail
