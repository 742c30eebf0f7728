#pragma once
// CUDA runtime helpers: device discovery, error checks, streams and events.
// Built only when distlab is built with CUDA (DISTLAB_HAVE_CUDA).
//
// Note [CUDA streams]
// Work on a GPU is ordered by streams. Every thread has a current stream per
// device (the default stream until set); kernels, copies and collectives are
// enqueued on it. StreamGuard swaps the current stream for a scope; an Event
// recorded on one stream can be waited on by another (a cross-stream wait
// that does not block the host) or, with a deadline, by the host.
//
// Thread-safety: free functions are safe from any thread; a Stream or Event
// object is a handle (copyable, not synchronised).
#include <cuda_runtime_api.h>

#include <chrono>
#include <memory>
#include <string>

#include "runtime/tensor/device.hpp"

namespace distlab::cuda {

// Number of visible CUDA devices; 0 without a driver or device (never throws).
int deviceCount();
bool isAvailable();
// Empty when a device exists, else why not ("no CUDA device: <driver text>").
std::string unavailableReason();
// Throws Error "<what> failed on cuda:<device>: <CUDA error text>" unless ok.
void check(cudaError_t err, const char* what, int device);
// Makes `device` current for the calling thread (throws naming it).
void setDevice(int device);

class Stream {
 public:
  Stream(int device, cudaStream_t handle) : device_(device), handle_(handle) {}
  int device() const { return device_; }
  cudaStream_t handle() const { return handle_; }
  bool operator==(const Stream&) const = default;
  // Blocks until everything enqueued so far has run (throws on a CUDA error).
  void synchronize() const;

 private:
  int device_;
  cudaStream_t handle_;
};

// The calling thread's current stream on `device` (the default stream until set).
Stream currentStream(int device);
void setCurrentStream(const Stream& stream);
// A stream from a small per-device pool of non-blocking streams (round robin,
// never destroyed, as PyTorch's pool): for communication and side copies.
Stream streamFromPool(int device);

// Makes `stream` current (and its device current) for the guard's scope.
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  Stream previous_;
  int previousDevice_;
};

// A CUDA event without timing (cheap); created on first record.
class Event {
 public:
  Event() = default;
  // Captures the work enqueued on `stream` so far.
  void record(const Stream& stream);
  // Makes `stream` wait for the recorded work without blocking the host.
  void block(const Stream& stream) const;
  bool query() const;  // true when the recorded work is done (or none recorded)
  // Waits on the host until done or `timeout` passes; false on timeout.
  bool synchronize(std::chrono::milliseconds timeout) const;

 private:
  std::shared_ptr<CUevent_st> event_;
  int device_ = -1;
};

}  // namespace distlab::cuda
