#pragma once
// A small pickle writer: JSON-shaped values as Python's pickle protocol 2, the
// format PyTorch's flight-recorder dumps are in and its analyzer loads with
// pickle.load (torch_dump_export.hpp).
//
// Objects become dicts, arrays lists, strings str, integers int (any int64 or
// uint64), floats float, booleans bool and null None. Nothing is memoized and
// nothing but those types is written, so any unpickler (pickle_reader.hpp,
// Python's) reads the value back exactly: a float as its 8 bytes, an integer
// as its value. Binary JSON values are refused (ValueError).
#include <string>

#include <nlohmann/json.hpp>

namespace distlab::emulator {

// PROTO 2, the value, STOP.
std::string toPickle(const nlohmann::json& value);

}  // namespace distlab::emulator
