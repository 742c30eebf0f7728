#pragma once
// What a user's own program may call when it runs under a scenario
// (`distlab run` with [workload] kind = "program"; Note [Programs under a
// scenario] in runtime/comm/init_hook.hpp). Linking the CMake target
// distlab::program is all a program needs for faults, link emulation, the
// debug level, tracing and its result; these calls add what the runner cannot
// see by itself. Outside a scenario (plain `distlab launch`, a single process)
// every call here does nothing, so the program runs the same either way.
#include <string>

namespace distlab::program {

// Whether this process runs under a scenario and has created its default
// process group (the scenario's machinery is installed).
bool underScenario();

// Marks the start of training step `step` (from 0): a hang, crash or
// straggler with `at_step = N` fires here once N is reached; the other kinds
// at the first matching operation from then on. Without markers, each
// training forward of a DDP or root FSDP module begins the next step (Note
// [Training observer] in runtime/autograd/training_observer.hpp); the first
// marker turns that count off. Steps only move forward; a smaller number than
// the last one is a ValueError (a loop restarted from zero would re-fire
// nothing and mislead).
void step(int step);

// Records one value of a named series for the scenario's expectations
// ([expect.report.<name>]: equal across ranks, within bounds, decreased) and
// the report file. `name`: letters, digits, '_', '.', '-' (ValueError
// otherwise). Non-finite values are kept and reported as such.
void report(const std::string& name, double value);

}  // namespace distlab::program
