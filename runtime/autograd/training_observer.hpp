#pragma once
// Where a training iteration begins, for whoever needs to count them without
// the training loop's help (Note [Training step observer]).
//
// Note [Training step observer]
// A forward of DistributedDataParallel, or of the root FSDP module, with grad
// mode on begins a training iteration (as DDP's own iteration count does:
// forwards under no_sync count, forwards under NoGradGuard do not). Both call
// notifyTrainingStepBegins() first, before any collective of the iteration,
// so an observer can act "at the start of step N". The scenario machinery of
// a user's program (emulator/program/) registers one to fire `at_step`
// faults without step markers in the program; nothing else does. A program
// that runs two such modules per iteration (a GAN) begins two steps per
// iteration: it should mark its steps itself.
#include <functional>

namespace distlab {

// Process-wide; the last one set wins; an empty function removes it. The
// observer runs on the thread of the forward and may block (a hang fault).
void setTrainingStepObserver(std::function<void()> observer);
void notifyTrainingStepBegins();

}  // namespace distlab
