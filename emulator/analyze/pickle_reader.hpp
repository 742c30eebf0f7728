#pragma once
// A small pickle reader for what flight-recorder dumps hold: PyTorch's dump
// (c10's pickler, protocol 2) and a dump re-pickled by Python (protocol 2 to
// 5), read into JSON-shaped values: dicts become objects (str or int keys,
// an int key as its decimal text), lists and tuples arrays, str strings,
// int/float/bool/None numbers, booleans and null. Shared and memoized values
// (PUT/GET) are followed, and the list builders c10's pickler may call
// (torch.jit._pickle build_intlist, build_doublelist, build_boollist,
// restore_type_tag) give their list. Nothing else is ever called or built:
// any other opcode or global is an error, never executed.
//
// Errors: ValueError "analyze: <path>: pickle: byte <offset>: <what>; <fix>"
// for an unknown or truncated opcode, a value of a type a dump does not hold,
// a stack or mark that does not add up, or a value past the caps of Note
// [Dump caps] (dump_reader.hpp: file size, nesting, list length, values).
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace distlab::emulator {

bool looksLikePickle(std::string_view bytes);  // starts with PROTO (0x80)
nlohmann::json fromPickle(std::string_view bytes, const std::string& path);

}  // namespace distlab::emulator
