#pragma once
// The program room's init hook (Note [Programs under a scenario] in
// runtime/comm/init_hook.hpp): registered by the distlab::program target's
// registration object, or by a call for programs that link the library
// directly.
namespace distlab::emulator {

// Registers the hook with initProcessGroup (idempotent).
void installProgramInitHook();

}  // namespace distlab::emulator
