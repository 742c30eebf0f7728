// The pickle writer and reader of `distlab analyze` (PyTorch-format dumps):
// exact bytes for each kind of value, pickles Python itself wrote (protocols
// 2 and 4, with shared memoized values), and clear errors for damaged or
// hostile input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "emulator/analyze/pickle_reader.hpp"
#include "emulator/analyze/pickle_writer.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::emulator {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

std::string bytes(const char* s, size_t n) { return std::string(s, n); }

// PROTO 2, <body>, STOP.
std::string framed(const std::string& body) { return "\x80\x02" + body + "."; }

std::string errorOf(const std::string& pickle) {
  try {
    fromPickle(pickle, "dump.pkl");
  } catch (const ValueError& e) {
    return e.what();
  }
  return "no error";
}

TEST(PickleWriter, IntegersTakeTheSmallestOpcode) {
  EXPECT_EQ(toPickle(json(0)), framed(bytes("K\x00", 2)));
  EXPECT_EQ(toPickle(json(255)), framed("K\xff"));
  EXPECT_EQ(toPickle(json(256)), framed(bytes("M\x00\x01", 3)));
  EXPECT_EQ(toPickle(json(-1)), framed("J\xff\xff\xff\xff"));
  EXPECT_EQ(toPickle(json(int64_t{1} << 40)), framed(bytes("\x8a\x06\x00\x00\x00\x00\x00\x01", 8)));
  EXPECT_EQ(toPickle(json(-(int64_t{1} << 40))),
            framed(bytes("\x8a\x06\x00\x00\x00\x00\x00\xff", 8)));
  EXPECT_EQ(toPickle(json(int64_t{2147483648})), framed(bytes("\x8a\x05\x00\x00\x00\x80\x00", 7)));
  EXPECT_EQ(toPickle(json(std::numeric_limits<uint64_t>::max())),
            framed(bytes("\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00", 11)));
}

TEST(PickleWriter, ContainersAndScalars) {
  EXPECT_EQ(toPickle(json::parse(R"({"a": [true, null, 1.5], "b": {}})")),
            framed(bytes("}(X\x01\x00\x00\x00"
                         "a](\x88N"
                         "G\x3f\xf8\x00\x00\x00\x00\x00\x00"
                         "e"
                         "X\x01\x00\x00\x00"
                         "b}u",
                         30)));
  EXPECT_EQ(toPickle(json::array()), framed("]"));
  EXPECT_EQ(toPickle(json(false)), framed("\x89"));
}

TEST(PickleReader, ReadsBackWhatTheWriterWrote) {
  const json v = json::parse(R"({"entries": [{"input_sizes": [[3, 4]], "state": "started",
      "time": null, "ok": false, "ms": 0.25, "neg": -70000, "big": 9007199254740993,
      "name": "nccl:send 0->2 \u00e9"}], "version": "2.7", "empty": {}})");
  EXPECT_EQ(fromPickle(toPickle(v), "p"), v);
  const json edges =
      json::array({std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
                   std::numeric_limits<uint64_t>::max(), -128, -129, 65535, 65536});
  EXPECT_EQ(fromPickle(toPickle(edges), "p"), edges);
}

// pickle.dumps({'p': x, 'q': x, 't': ('n', 'd'), 'f': 1.5, 'big': 2**40, 'neg': -5,
//               'none': None, 'yes': True}) with x = {'a': [1, 2]}, by Python 3.11:
// x is memoized while still empty and fetched again for 'q'.
const json kPythonValue = json::parse(R"({"p": {"a": [1, 2]}, "q": {"a": [1, 2]},
    "t": ["n", "d"], "f": 1.5, "big": 1099511627776, "neg": -5, "none": null, "yes": true})");

TEST(PickleReader, ReadsPythonsProtocolFour) {
  const std::string p = bytes(
      "\x80\x04\x95\x61\x00\x00\x00\x00\x00\x00\x00\x7d\x94\x28\x8c\x01\x70\x94\x7d\x94\x8c\x01"
      "\x61\x94\x5d\x94\x28\x4b\x01\x4b\x02\x65\x73\x8c\x01\x71\x94\x68\x02\x8c\x01\x74\x94\x8c"
      "\x01\x6e\x94\x8c\x01\x64\x94\x86\x94\x8c\x01\x66\x94\x47\x3f\xf8\x00\x00\x00\x00\x00\x00"
      "\x8c\x03\x62\x69\x67\x94\x8a\x06\x00\x00\x00\x00\x00\x01\x8c\x03\x6e\x65\x67\x94\x4a\xfb"
      "\xff\xff\xff\x8c\x04\x6e\x6f\x6e\x65\x94\x4e\x8c\x03\x79\x65\x73\x94\x88\x75\x2e",
      108);
  EXPECT_EQ(fromPickle(p, "p"), kPythonValue);
}

TEST(PickleReader, ReadsPythonsProtocolTwo) {
  const std::string p = bytes(
      "\x80\x02\x7d\x71\x00\x28\x58\x01\x00\x00\x00\x70\x71\x01\x7d\x71\x02\x58\x01\x00\x00\x00"
      "\x61\x71\x03\x5d\x71\x04\x28\x4b\x01\x4b\x02\x65\x73\x58\x01\x00\x00\x00\x71\x71\x05\x68"
      "\x02\x58\x01\x00\x00\x00\x74\x71\x06\x58\x01\x00\x00\x00\x6e\x71\x07\x58\x01\x00\x00\x00"
      "\x64\x71\x08\x86\x71\x09\x58\x01\x00\x00\x00\x66\x71\x0a\x47\x3f\xf8\x00\x00\x00\x00\x00"
      "\x00\x58\x03\x00\x00\x00\x62\x69\x67\x71\x0b\x8a\x06\x00\x00\x00\x00\x00\x01\x58\x03\x00"
      "\x00\x00\x6e\x65\x67\x71\x0c\x4a\xfb\xff\xff\xff\x58\x04\x00\x00\x00\x6e\x6f\x6e\x65\x71"
      "\x0d\x4e\x58\x03\x00\x00\x00\x79\x65\x73\x71\x0e\x88\x75\x2e",
      147);
  EXPECT_EQ(fromPickle(p, "p"), kPythonValue);
}

TEST(PickleReader, ReadsTheListBuildersOfC10sPickler) {
  // torch.jit._pickle.build_intlist(([3, 4],))
  const std::string p = framed(
      "ctorch.jit._pickle\nbuild_intlist\n](K\x03K\x04"
      "e\x85R");
  EXPECT_EQ(fromPickle(p, "p"), json::parse("[3, 4]"));
}

TEST(PickleReader, TruncatedInputNamesTheFileAndTheFix) {
  const std::string whole = toPickle(json::parse(R"({"version": "2.7"})"));
  const std::string e = errorOf(whole.substr(0, whole.size() - 4));
  EXPECT_THAT(e, HasSubstr("analyze: dump.pkl: pickle: byte "));
  EXPECT_THAT(e, HasSubstr("truncated: BINUNICODE needs 3 more bytes"));
  EXPECT_THAT(e, HasSubstr("copy or dump it again"));
  EXPECT_THAT(errorOf(whole.substr(0, whole.size() - 1)), HasSubstr("truncated: an opcode"));
}

TEST(PickleReader, UnknownOpcodesAndCallsAreRefusedNotRun) {
  EXPECT_THAT(errorOf(framed(bytes("B\x01\x00\x00\x00x", 6))),
              HasSubstr("pickle: byte 2: unknown opcode 0x42; a flight recorder dump holds only"));
  EXPECT_THAT(errorOf(framed(bytes("cos\nsystem\n(X\x02\x00\x00\x00lstR", 21))),
              HasSubstr("REDUCE calls something a flight recorder dump never holds"));
  EXPECT_THAT(errorOf("\x80\x07N."), HasSubstr("pickle protocol 7; expected 2 to 5"));
  EXPECT_THAT(errorOf(framed("NN")), HasSubstr("STOP with 2 values"));
  EXPECT_THAT(errorOf(framed("e")), HasSubstr("APPENDS finds no MARK"));
  EXPECT_THAT(errorOf(framed(bytes("h\x05", 2))),
              HasSubstr("GET of memo entry 5, which was never PUT"));
}

TEST(PickleReader, SelfReferenceAndSharedExpansionAreBounded) {
  // l = []; l.append(l)
  EXPECT_THAT(errorOf(framed(bytes("]q\x00h\x00"
                                   "a",
                                   6))),
              HasSubstr("nested deeper than 32"));
  // Each list holds the previous one twice: 2^30 values once expanded (all
  // 31 lists in one tuple).
  std::string p = "(]q" + bytes("\x00", 1);
  for (int i = 1; i <= 30; ++i) {
    p += bytes("](h", 3) + static_cast<char>(i - 1) + "h" + static_cast<char>(i - 1) + "eq" +
         static_cast<char>(i);
  }
  EXPECT_THAT(errorOf(framed(p + "t")), HasSubstr("more than 2097152 values once shared values are "
                                                  "expanded"));
}

}  // namespace
}  // namespace distlab::emulator
