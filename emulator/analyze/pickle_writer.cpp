#include "emulator/analyze/pickle_writer.hpp"

#include <bit>
#include <cstdint>

#include "emulator/analyze/pickle_opcodes.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::emulator {
namespace {

using nlohmann::json;

namespace op = pickle_op;  // Note [Pickle opcodes]

void putOp(std::string& out, unsigned char code) { out += static_cast<char>(code); }

void putLittleEndian(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

// The smallest opcode that holds `v`: BININT1/BININT2 (unsigned), BININT
// (signed 32-bit), else LONG1 with the fewest two's-complement bytes.
void putInt(std::string& out, int64_t v) {
  if (v >= 0 && v < 256) {
    putOp(out, op::kBinInt1);
    putLittleEndian(out, static_cast<uint64_t>(v), 1);
  } else if (v >= 0 && v < 65536) {
    putOp(out, op::kBinInt2);
    putLittleEndian(out, static_cast<uint64_t>(v), 2);
  } else if (v >= INT32_MIN && v <= INT32_MAX) {
    putOp(out, op::kBinInt);
    putLittleEndian(out, static_cast<uint64_t>(v), 4);
  } else {
    // Drop a top byte while the bytes below it still carry the sign.
    const auto fits = [v](int n) {
      const int64_t top = v >> (8 * n - 1);
      return top == 0 || top == -1;
    };
    int bytes = 8;
    while (bytes > 1 && fits(bytes - 1)) --bytes;
    putOp(out, op::kLong1);
    out += static_cast<char>(bytes);
    putLittleEndian(out, static_cast<uint64_t>(v), bytes);
  }
}

// A uint64 past int64: LONG1 of 9 bytes, the last 0 (positive).
void putUnsigned(std::string& out, uint64_t v) {
  if (v <= static_cast<uint64_t>(INT64_MAX)) return putInt(out, static_cast<int64_t>(v));
  putOp(out, op::kLong1);
  out += '\x09';
  putLittleEndian(out, v, 8);
  out += '\0';
}

void putFloat(std::string& out, double d) {
  putOp(out, op::kBinFloat);
  const uint64_t bits = std::bit_cast<uint64_t>(d);
  for (int i = 7; i >= 0; --i) out += static_cast<char>((bits >> (8 * i)) & 0xff);  // big-endian
}

void putString(std::string& out, const std::string& s) {
  putOp(out, op::kBinUnicode);
  putLittleEndian(out, s.size(), 4);
  out += s;
}

void putValue(std::string& out, const json& v);

void putList(std::string& out, const json& v) {
  putOp(out, op::kEmptyList);
  if (v.empty()) return;
  putOp(out, op::kMark);
  for (const json& item : v) putValue(out, item);
  putOp(out, op::kAppends);
}

void putDict(std::string& out, const json& v) {
  putOp(out, op::kEmptyDict);
  if (v.empty()) return;
  putOp(out, op::kMark);
  for (const auto& [key, item] : v.items()) {
    putString(out, key);
    putValue(out, item);
  }
  putOp(out, op::kSetItems);
}

void putValue(std::string& out, const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      putOp(out, op::kNone);
      return;
    case json::value_t::boolean:
      putOp(out, v.get<bool>() ? op::kTrue : op::kFalse);
      return;
    case json::value_t::number_integer:
      return putInt(out, v.get<int64_t>());
    case json::value_t::number_unsigned:
      return putUnsigned(out, v.get<uint64_t>());
    case json::value_t::number_float:
      return putFloat(out, v.get<double>());
    case json::value_t::string:
      return putString(out, v.get_ref<const std::string&>());
    case json::value_t::array:
      return putList(out, v);
    case json::value_t::object:
      return putDict(out, v);
    default:
      throw ValueError("toPickle: a binary value has no pickle form here");
  }
}

}  // namespace

std::string toPickle(const json& value) {
  std::string out;
  putOp(out, op::kProto);
  out += '\x02';
  putValue(out, value);
  putOp(out, op::kStop);
  return out;
}

}  // namespace distlab::emulator
