#pragma once
// Umbrella header of the autograd layer: grad mode, graph nodes, the engine
// (backward, queued callbacks, reachable leaves), hooks, differentiable ops
// and gradcheck.
#include "runtime/autograd/engine.hpp"     // IWYU pragma: export
#include "runtime/autograd/grad_mode.hpp"  // IWYU pragma: export
#include "runtime/autograd/gradcheck.hpp"  // IWYU pragma: export
#include "runtime/autograd/hooks.hpp"      // IWYU pragma: export
#include "runtime/autograd/node.hpp"       // IWYU pragma: export
#include "runtime/autograd/ops.hpp"        // IWYU pragma: export
