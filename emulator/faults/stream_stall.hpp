#pragma once
// Note [A hang in flight]
// A `hang` fault normally stops the calling thread before the collective is
// issued. On a GPU a rank can also hang with the collective already issued:
// a kernel before it never finishes, so the collective sits in flight on its
// stream. `in_flight = true` makes that happen: the fault enqueues a host
// function on the current stream of the collective's device that blocks for
// the hang's length, then lets the collective go to the backend (nccl, which
// makes its communication stream wait for the current one). The caller gets
// its Work back at once; the Work never completes, so the backend's watchdog
// must time it out and abort the communicator, and the rank must still exit
// (its error exit ends the process, blocked stream callback and all). A
// "forever" hang is bounded by the plan's hang cap like every other hang.
#include <chrono>

#include "runtime/tensor/device.hpp"

namespace distlab::emulator {

// Enqueues, on `device`'s current stream, a host function that blocks for
// `length`. Throws Error when `device` is not a CUDA device or distlab was
// built without CUDA.
void stallDeviceStream(Device device, std::chrono::milliseconds length);

}  // namespace distlab::emulator
