#include "emulator/analyze/pickle_reader.hpp"

#include <fmt/format.h>

#include <bit>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "emulator/analyze/dump_fields.hpp"
#include "emulator/analyze/dump_reader.hpp"
#include "emulator/analyze/pickle_opcodes.hpp"

namespace distlab::emulator {
namespace {

using nlohmann::json;
namespace op = pickle_op;  // Note [Pickle opcodes]

// Note [Pickle values by reference]
// A pickle may PUT a container in the memo while it is still empty and fill
// it afterwards (c10's pickler and Python's both do), then GET it again
// elsewhere. Values are therefore nodes, referred to by their index in one
// arena the unpickler owns (a list holding itself is then a cycle of
// indices, not of owning pointers, and is freed with the arena), and become
// JSON only at STOP; that conversion counts every value it emits against kMaxDumpValues and stops
// at kMaxDumpDepth, so a small file whose GETs share one list many times over, or a list holding
// itself, is refused instead of expanding without bound.
using NodeId = size_t;  // index into Unpickler::nodes_
enum class Kind { kScalar, kList, kTuple, kDict, kGlobal };
struct Node {
  Kind kind = Kind::kScalar;
  json scalar;                // kScalar; kGlobal: "module.name"
  std::vector<NodeId> items;  // list, tuple; dict: key, value, key, value, ...
};

// The list builders c10's pickler may emit; each returns its first argument.
bool isListBuilder(const std::string& name) {
  return name == "torch.jit._pickle.build_intlist" ||
         name == "torch.jit._pickle.build_doublelist" ||
         name == "torch.jit._pickle.build_boollist" || name == "torch.jit._pickle.restore_type_tag";
}

class Unpickler {
 public:
  Unpickler(std::string_view bytes, const std::string& path) : in_(bytes), path_(path) {}
  json run();

 private:
  bool step();  // false at STOP
  uint64_t littleEndian(int bytes, const char* what);
  std::string_view take(uint64_t n, const char* what);
  std::string line(const char* what);
  NodeId newNode(Kind kind, json scalar = json());
  void push(NodeId n);
  void pushScalar(json v) { push(newNode(Kind::kScalar, std::move(v))); }
  NodeId pop(const char* what);
  std::vector<NodeId> popToMark(const char* what);
  NodeId top(const char* what);
  void addItems(const char* what, std::vector<NodeId> items, bool dict);
  void memoPut(uint64_t key);
  void memoGet(uint64_t key);
  void reduce();
  void pushLong(std::string_view bytes);
  json toJson(const Node& n, size_t depth);
  [[noreturn]] void fail(const std::string& what) const;

  std::string_view in_;
  const std::string& path_;
  size_t pos_ = 0, opAt_ = 0;
  std::vector<Node> nodes_;  // every value made so far; the stack and memo index it
  std::vector<NodeId> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, NodeId> memo_;
  size_t created_ = 0, emitted_ = 0;
};

void Unpickler::fail(const std::string& what) const {
  failDump(path_, fmt::format("pickle: byte {}: {}", opAt_, what));
}

std::string_view Unpickler::take(uint64_t n, const char* what) {
  if (n > in_.size() - pos_) {
    fail(
        fmt::format("truncated: {} needs {} more bytes, {} are left; the file was cut off "
                    "(copy or dump it again)",
                    what, n, in_.size() - pos_));
  }
  const std::string_view s = in_.substr(pos_, n);
  pos_ += n;
  return s;
}

uint64_t Unpickler::littleEndian(int bytes, const char* what) {
  const std::string_view s = take(bytes, what);
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[i]);
  return v;
}

std::string Unpickler::line(const char* what) {
  const size_t end = in_.find('\n', pos_);
  if (end == std::string_view::npos || end - pos_ > 256) {
    fail(fmt::format("truncated: {} has no end of line", what));
  }
  std::string s(in_.substr(pos_, end - pos_));
  pos_ = end + 1;
  return s;
}

NodeId Unpickler::newNode(Kind kind, json scalar) {
  nodes_.push_back(Node{kind, std::move(scalar), {}});
  return nodes_.size() - 1;
}

void Unpickler::push(NodeId n) {
  if (++created_ > kMaxDumpValues) {
    fail(fmt::format("more than {} values; expected at most that many in a dump", kMaxDumpValues));
  }
  stack_.push_back(n);
}

NodeId Unpickler::pop(const char* what) {
  if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back())) {
    fail(fmt::format("{} finds no value on the stack; the pickle is damaged", what));
  }
  const NodeId n = stack_.back();
  stack_.pop_back();
  return n;
}

NodeId Unpickler::top(const char* what) {
  if (stack_.empty())
    fail(fmt::format("{} finds no value on the stack; the pickle is damaged", what));
  return stack_.back();
}

std::vector<NodeId> Unpickler::popToMark(const char* what) {
  if (marks_.empty()) fail(fmt::format("{} finds no MARK; the pickle is damaged", what));
  const size_t at = marks_.back();
  marks_.pop_back();
  std::vector<NodeId> items(stack_.begin() + static_cast<long>(at), stack_.end());
  stack_.resize(at);
  return items;
}

void Unpickler::addItems(const char* what, std::vector<NodeId> items, bool dict) {
  Node& target = nodes_[top(what)];
  if (target.kind != (dict ? Kind::kDict : Kind::kList)) {
    fail(fmt::format("{} adds to a value that is not a {}; the pickle is damaged", what,
                     dict ? "dict" : "list"));
  }
  if (dict && items.size() % 2 != 0) fail(fmt::format("{} has a key without a value", what));
  if (target.items.size() + items.size() > (dict ? 2 : 1) * kMaxDumpListLength) {
    fail(fmt::format("more than {} items in one list or dict; expected at most that many",
                     kMaxDumpListLength));
  }
  target.items.insert(target.items.end(), items.begin(), items.end());
}

void Unpickler::memoPut(uint64_t key) {
  if (memo_.size() >= kMaxDumpValues) fail("too many memo entries");
  memo_[key] = top("PUT");
}

void Unpickler::memoGet(uint64_t key) {
  auto it = memo_.find(key);
  if (it == memo_.end()) fail(fmt::format("GET of memo entry {}, which was never PUT", key));
  push(it->second);
}

// REDUCE calls only the list builders (isListBuilder): the result is the
// first item of the argument tuple.
void Unpickler::reduce() {
  const Node& args = nodes_[pop("REDUCE")];
  const Node& callable = nodes_[pop("REDUCE")];
  if (callable.kind != Kind::kGlobal || !isListBuilder(callable.scalar.get<std::string>())) {
    fail(
        "REDUCE calls something a flight recorder dump never holds; only the list builders of "
        "torch.jit._pickle are read");
  }
  if (args.kind != Kind::kTuple || args.items.empty()) fail("REDUCE without arguments");
  push(args.items[0]);
}

// LONG1's little-endian two's complement, as an int64 (or uint64 when only
// a sign byte exceeds it).
void Unpickler::pushLong(std::string_view b) {
  if (b.size() > 9 || (b.size() == 9 && b[8] != 0)) {
    fail("an integer wider than 64 bits; a dump holds none");
  }
  uint64_t v = 0;
  for (size_t i = std::min<size_t>(b.size(), 8); i-- > 0;) {
    v = (v << 8) | static_cast<unsigned char>(b[i]);
  }
  if (b.size() == 9) return pushScalar(json(v));
  const bool negative = !b.empty() && (static_cast<unsigned char>(b.back()) & 0x80);
  if (negative && b.size() < 8) v |= ~uint64_t{0} << (8 * b.size());
  pushScalar(json(static_cast<int64_t>(v)));
}

bool Unpickler::step() {
  opAt_ = pos_;
  const auto code = static_cast<unsigned char>(take(1, "an opcode")[0]);
  switch (code) {
    case op::kProto: {
      const auto v = static_cast<unsigned char>(take(1, "PROTO")[0]);
      if (v < 2 || v > 5) fail(fmt::format("pickle protocol {}; expected 2 to 5", v));
      return true;
    }
    case op::kFrame:
      littleEndian(8, "FRAME");
      return true;  // a length hint only
    case op::kStop:
      return false;
    case op::kNone:
      pushScalar(nullptr);
      return true;
    case op::kTrue:
      pushScalar(true);
      return true;
    case op::kFalse:
      pushScalar(false);
      return true;
    case op::kBinInt:
      pushScalar(static_cast<int64_t>(static_cast<int32_t>(littleEndian(4, "BININT"))));
      return true;
    case op::kBinInt1:
      pushScalar(littleEndian(1, "BININT1"));
      return true;
    case op::kBinInt2:
      pushScalar(littleEndian(2, "BININT2"));
      return true;
    case op::kLong1:
      pushLong(take(littleEndian(1, "LONG1"), "LONG1"));
      return true;
    case op::kBinFloat: {
      uint64_t bits = 0;
      for (char c : take(8, "BINFLOAT")) bits = (bits << 8) | static_cast<unsigned char>(c);
      pushScalar(std::bit_cast<double>(bits));
      return true;
    }
    case op::kShortBinUnicode:
      pushScalar(std::string(take(littleEndian(1, "SHORT_BINUNICODE"), "SHORT_BINUNICODE")));
      return true;
    case op::kBinUnicode:
      pushScalar(std::string(take(littleEndian(4, "BINUNICODE"), "BINUNICODE")));
      return true;
    case op::kBinUnicode8:
      pushScalar(std::string(take(littleEndian(8, "BINUNICODE8"), "BINUNICODE8")));
      return true;
    case op::kEmptyList:
      push(newNode(Kind::kList));
      return true;
    case op::kEmptyDict:
      push(newNode(Kind::kDict));
      return true;
    case op::kEmptyTuple:
      push(newNode(Kind::kTuple));
      return true;
    case op::kMark:
      marks_.push_back(stack_.size());
      return true;
    case op::kAppend:
      addItems("APPEND", {pop("APPEND")}, false);
      return true;
    case op::kAppends:
      addItems("APPENDS", popToMark("APPENDS"), false);
      return true;
    case op::kSetItem: {
      const NodeId v = pop("SETITEM"), k = pop("SETITEM");
      addItems("SETITEM", {k, v}, true);
      return true;
    }
    case op::kSetItems:
      addItems("SETITEMS", popToMark("SETITEMS"), true);
      return true;
    case op::kTuple:
    case op::kTuple1:
    case op::kTuple2:
    case op::kTuple3: {
      std::vector<NodeId> items;
      if (code == op::kTuple) {
        items = popToMark("TUPLE");
      } else {
        items.resize(code - op::kTuple1 + 1);
        for (size_t i = items.size(); i-- > 0;) items[i] = pop("TUPLE1/2/3");
      }
      const NodeId t = newNode(Kind::kTuple);
      nodes_[t].items = std::move(items);
      push(t);
      return true;
    }
    case op::kBinPut:
      memoPut(littleEndian(1, "BINPUT"));
      return true;
    case op::kLongBinPut:
      memoPut(littleEndian(4, "LONG_BINPUT"));
      return true;
    case op::kMemoize:
      memoPut(memo_.size());
      return true;
    case op::kBinGet:
      memoGet(littleEndian(1, "BINGET"));
      return true;
    case op::kLongBinGet:
      memoGet(littleEndian(4, "LONG_BINGET"));
      return true;
    case op::kGlobal: {
      std::string module = line("GLOBAL"), name = line("GLOBAL");
      push(newNode(Kind::kGlobal, module + "." + name));
      return true;
    }
    case op::kReduce:
      reduce();
      return true;
    default:
      fail(
          fmt::format("unknown opcode 0x{:02x}; a flight recorder dump holds only dicts, lists, "
                      "tuples, strings, numbers, booleans and None (pickle protocol 2 to 5)",
                      code));
  }
}

json Unpickler::toJson(const Node& n, size_t depth) {
  if (depth > kMaxDumpDepth) {
    fail(
        fmt::format("values nested deeper than {} (or a value holding itself); a dump nests 5 "
                    "deep",
                    kMaxDumpDepth));
  }
  if (++emitted_ > kMaxDumpValues) {
    fail(
        fmt::format("more than {} values once shared values are expanded; expected at most "
                    "that many in a dump",
                    kMaxDumpValues));
  }
  switch (n.kind) {
    case Kind::kScalar:
      return n.scalar;
    case Kind::kList:
    case Kind::kTuple: {
      json out = json::array();
      for (const NodeId i : n.items) out.push_back(toJson(nodes_[i], depth + 1));
      return out;
    }
    case Kind::kDict: {
      json out = json::object();
      for (size_t i = 0; i + 1 < n.items.size(); i += 2) {
        const json key = toJson(nodes_[n.items[i]], depth + 1);
        if (!key.is_string() && !key.is_number_integer()) {
          fail(fmt::format("a dict key {} is not a string or an integer", shownText(key.dump())));
        }
        out[key.is_string() ? key.get<std::string>() : key.dump()] =
            toJson(nodes_[n.items[i + 1]], depth + 1);
      }
      return out;
    }
    default:
      fail(fmt::format("a global ({}) where a value belongs", n.scalar.dump()));
  }
}

json Unpickler::run() {
  while (step()) {
  }
  opAt_ = pos_ - 1;
  if (stack_.size() != 1 || !marks_.empty()) {
    fail(fmt::format("STOP with {} values and {} marks left; expected one value", stack_.size(),
                     marks_.size()));
  }
  return toJson(nodes_[stack_.back()], 0);
}

}  // namespace

bool looksLikePickle(std::string_view bytes) {
  return !bytes.empty() && static_cast<unsigned char>(bytes[0]) == op::kProto;
}

json fromPickle(std::string_view bytes, const std::string& path) {
  if (bytes.size() > kMaxDumpBytes) {
    failDump(path, fmt::format("{} bytes is larger than any flight recorder dump; expected at "
                               "most {} bytes",
                               bytes.size(), kMaxDumpBytes));
  }
  return Unpickler(bytes, path).run();
}

}  // namespace distlab::emulator
