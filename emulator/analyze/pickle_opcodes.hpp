#pragma once
// Note [Pickle opcodes]: the one-byte opcodes of pickle protocols 2 to 5 that
// pickle_writer.cpp writes and pickle_reader.cpp reads, by their names in
// Python's pickletools; the values are the protocol's.
namespace distlab::emulator::pickle_op {

constexpr unsigned char kProto = 0x80, kFrame = 0x95, kStop = '.';
constexpr unsigned char kNone = 'N', kTrue = 0x88, kFalse = 0x89;
constexpr unsigned char kBinInt = 'J', kBinInt1 = 'K', kBinInt2 = 'M', kLong1 = 0x8a;
constexpr unsigned char kBinFloat = 'G';
constexpr unsigned char kBinUnicode = 'X', kShortBinUnicode = 0x8c, kBinUnicode8 = 0x8d;
constexpr unsigned char kEmptyList = ']', kEmptyDict = '}', kEmptyTuple = ')', kMark = '(';
constexpr unsigned char kAppend = 'a', kAppends = 'e', kSetItem = 's', kSetItems = 'u';
constexpr unsigned char kTuple = 't', kTuple1 = 0x85, kTuple2 = 0x86, kTuple3 = 0x87;
constexpr unsigned char kBinPut = 'q', kLongBinPut = 'r', kMemoize = 0x94;
constexpr unsigned char kBinGet = 'h', kLongBinGet = 'j';
constexpr unsigned char kGlobal = 'c', kReduce = 'R';

}  // namespace distlab::emulator::pickle_op
