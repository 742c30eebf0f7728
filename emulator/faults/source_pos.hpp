#pragma once
// SourcePos: where in a scenario file an element came from, so later checks (a
// fault on a step that never runs, an expectation on a missing rank) still
// report `file:line: message`. It lives in faults/, the lowest room that keeps
// one (FaultSpec, fault_spec.hpp); the scenario parser, above it, uses it too.
#include <string>

namespace distlab::emulator {

struct SourcePos {
  std::string file;
  int line = 0;
  std::string str() const { return file + ":" + std::to_string(line); }
};

}  // namespace distlab::emulator
