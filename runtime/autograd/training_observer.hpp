#pragma once
// Points of a training iteration that the engines announce, for whoever needs
// them without the training loop's help (Note [Training observer]).
//
// Note [Training observer]
// Two points, announced by DistributedDataParallel and by the root FSDP module:
//   - a step begins: a forward with grad mode on (as DDP's own iteration count:
//     forwards under no_sync count, forwards under NoGradGuard do not), before
//     any collective of the iteration, so an observer can act "at the start of
//     step N";
//   - gradients are ready: backward has finished and the synchronised
//     gradients are in the parameters' .grad, before the optimizer step (DDP:
//     the end of the Reducer's finalize; FSDP: after the root's post-backward
//     has set the sharded .grads), with those parameters.
// And two questions, for the engine faults a rank's own loop cannot be asked
// to commit:
//   - skip this backward? asked at the start of every autograd::backward
//     (a rank that skips its backward: no gradient, no hook, no bucket);
//   - which parameters does this forward leave out? asked at every training
//     forward of DistributedDataParallel with the module's parameter names;
//     DDP runs that forward with those parameters detached (their values, not
//     their autograd identity), so they are unused exactly as a parameter the
//     forward never touches: no gradient reaches them, and DDP's
//     find_unused_parameters search does not find them.
// The scenario machinery of a user's program (emulator/program/) registers an
// observer to fire `at_step` and gradient faults without calls in the program;
// nothing else does. A program that runs two such modules per iteration (a
// GAN) begins two steps per iteration: it should mark its steps itself.
#include <functional>
#include <string>
#include <vector>

#include "runtime/tensor/tensor.hpp"

namespace distlab {

struct TrainingObserver {
  std::function<void()> stepBegins;                                  // may block (a hang)
  std::function<void(const std::vector<Tensor>& params)> gradientsReady;  // may edit .grad
  std::function<bool()> skipBackward;
  // `parameterNames` lists the module's parameters (fully qualified names);
  // called only when needed, it costs a walk of the module.
  std::function<std::vector<std::string>(
      const std::function<std::vector<std::string>()>& parameterNames)>
      parametersLeftUnused;
};

// Process-wide; the last one set wins; empty functions are skipped. Observers
// run on the thread of the forward / backward.
void setTrainingObserver(TrainingObserver observer);
void notifyTrainingStepBegins();
void notifyGradientsReady(const std::vector<Tensor>& params);
// False without an observer.
bool observerSkipsBackward();
// Empty without an observer.
std::vector<std::string> observerParametersLeftUnused(
    const std::function<std::vector<std::string>()>& parameterNames);

}  // namespace distlab
