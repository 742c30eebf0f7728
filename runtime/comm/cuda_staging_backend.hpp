#pragma once
// CUDA tensors on a host backend (shm, gloo) by staging through pinned memory.
// Built only with CUDA (DISTLAB_HAVE_CUDA).
//
// Note [CUDA tensors on host backends]
// A backend registered with `stagesCuda` (backend_registry.hpp) also serves
// CUDA tensors: createProcessGroup routes the group's CUDA tensors to
// makeCudaStagingBackend(<the same backend instance>), so one shared-memory
// segment (or Gloo context) carries both, and several ranks can share one GPU
// in emulation. For each operation:
//   1. the caller's current stream records an event that a side stream (from
//      the device's pool) waits on, and every tensor the operation reads is
//      copied device -> pinned host on that side stream, which the issuing
//      thread then waits for (the copy is ordered after the kernels that
//      produced the tensor, whatever stream the caller uses next);
//   2. the host operation is issued on the inner backend with the pinned
//      tensors (every decorator -- DETAIL checks, fault injection, link
//      emulation, flight recorder -- sees it like any CPU operation);
//   3. when it completes, every tensor the operation writes is copied pinned
//      host -> device on the side stream and waited for, and only then is the
//      returned Work completed with the CUDA tensors as its result.
// So a completed Work's CUDA outputs hold the result on the device for any
// stream and any thread (future callbacks included); wait() returns when that
// is so. A failure of the host operation fails the Work with the same error;
// abort() reaches the inner Work. Pinned buffers are reused across operations
// of the same shape and dtype (a DDP bucket each iteration), up to a bound.
// Tensors in one call must be on one CUDA device ("... tensors on cuda:0 and
// cuda:1" otherwise); a CPU tensor here is a DistBackendError naming the op.
#include "runtime/comm/backend.hpp"

namespace distlab::comm {

// Wraps `hostBackend` (which keeps serving CPU tensors unchanged) for CUDA tensors.
BackendPtr makeCudaStagingBackend(BackendPtr hostBackend);

}  // namespace distlab::comm
