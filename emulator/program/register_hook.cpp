// The one object of the distlab::program target (an OBJECT library, so the
// linker keeps it in every program that links the target, and this static
// initializer runs before main): linking is the program's only change.
#include "emulator/program/program_session.hpp"

namespace {

const bool kProgramInitHookInstalled = [] {
  distlab::emulator::installProgramInitHook();
  return true;
}();

}  // namespace
