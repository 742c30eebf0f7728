#include "runtime/tensor/cuda/cuda_runtime.hpp"

#include <array>
#include <atomic>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "runtime/core/errors.hpp"

namespace distlab::cuda {
namespace {

constexpr int kPoolSize = 4;

struct Discovery {
  int count = 0;
  std::string reason;
};

const Discovery& discovery() {
  static const Discovery d = [] {
    Discovery out;
    const cudaError_t err = cudaGetDeviceCount(&out.count);
    if (err != cudaSuccess) {
      out.count = 0;
      out.reason = std::string("no CUDA device: ") + cudaGetErrorString(err);
      cudaGetLastError();  // clear the sticky-free error state
    } else if (out.count == 0) {
      out.reason = "no CUDA device: the driver reports 0 devices";
    }
    return out;
  }();
  return d;
}

thread_local std::unordered_map<int, cudaStream_t> tlsCurrent;

}  // namespace

int deviceCount() { return discovery().count; }
bool isAvailable() { return deviceCount() > 0; }
std::string unavailableReason() { return discovery().reason; }

void check(cudaError_t err, const char* what, int device) {
  if (err == cudaSuccess) return;
  cudaGetLastError();
  throw Error(std::string(what) + " failed on cuda:" + std::to_string(device) + ": " +
              cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

void setDevice(int device) {
  if (device < 0 || device >= deviceCount()) {
    throw Error("cuda:" + std::to_string(device) + " is not available (" +
                (isAvailable() ? std::to_string(deviceCount()) + " CUDA devices visible"
                               : unavailableReason()) +
                ")");
  }
  check(cudaSetDevice(device), "cudaSetDevice", device);
}

void Stream::synchronize() const {
  check(cudaStreamSynchronize(handle_), "cudaStreamSynchronize", device_);
}

Stream currentStream(int device) {
  const auto it = tlsCurrent.find(device);
  return Stream(device, it == tlsCurrent.end() ? nullptr : it->second);
}

void setCurrentStream(const Stream& stream) { tlsCurrent[stream.device()] = stream.handle(); }

Stream streamFromPool(int device) {
  static std::mutex mutex;
  static std::unordered_map<int, std::array<cudaStream_t, kPoolSize>> pools;
  static std::atomic<unsigned> next{0};
  std::lock_guard<std::mutex> lock(mutex);
  auto it = pools.find(device);
  if (it == pools.end()) {
    setDevice(device);
    std::array<cudaStream_t, kPoolSize> created{};
    for (auto& s : created) {
      check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate", device);
    }
    it = pools.emplace(device, created).first;
  }
  return Stream(device, it->second[next++ % kPoolSize]);
}

StreamGuard::StreamGuard(const Stream& stream)
    : previous_(currentStream(stream.device())), previousDevice_(0) {
  check(cudaGetDevice(&previousDevice_), "cudaGetDevice", stream.device());
  setDevice(stream.device());
  setCurrentStream(stream);
}

StreamGuard::~StreamGuard() {
  setCurrentStream(previous_);
  cudaSetDevice(previousDevice_);
}

void Event::record(const Stream& stream) {
  if (!event_) {
    cudaEvent_t e = nullptr;
    setDevice(stream.device());
    check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate",
          stream.device());
    event_.reset(e, [](cudaEvent_t p) { cudaEventDestroy(p); });
    device_ = stream.device();
  }
  check(cudaEventRecord(event_.get(), stream.handle()), "cudaEventRecord", stream.device());
}

void Event::block(const Stream& stream) const {
  if (!event_) return;
  check(cudaStreamWaitEvent(stream.handle(), event_.get(), 0), "cudaStreamWaitEvent",
        stream.device());
}

bool Event::query() const {
  if (!event_) return true;
  const cudaError_t err = cudaEventQuery(event_.get());
  if (err == cudaErrorNotReady) return false;
  check(err, "cudaEventQuery", device_);
  return true;
}

bool Event::synchronize(std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!query()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::yield();  // polling the event itself, bounded by the deadline
  }
  return true;
}

}  // namespace distlab::cuda
