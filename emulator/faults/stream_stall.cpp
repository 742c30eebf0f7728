#include "emulator/faults/stream_stall.hpp"

#include <thread>

#include "distlab/config.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/core/errors.hpp"
#if DISTLAB_HAVE_CUDA
#include "runtime/tensor/cuda/cuda_runtime.hpp"
#endif

namespace distlab::emulator {

#if DISTLAB_HAVE_CUDA
namespace {

// Runs on CUDA's callback thread, which must not call CUDA: it only waits.
void CUDART_CB holdStream(void* arg) {
  auto* until = static_cast<Deadline*>(arg);
  while (!until->expired()) {
    std::this_thread::sleep_for(std::min(until->remaining(), std::chrono::milliseconds(200)));
  }
  delete until;
}

}  // namespace

void stallDeviceStream(Device device, std::chrono::milliseconds length) {
  if (!device.isCuda()) {
    throw Error("a hang in flight stalls a CUDA stream, but the collective's tensors are on " +
                device.str());
  }
  const cuda::Stream stream = cuda::currentStream(device.index);
  auto* until = new Deadline(Deadline::after(length));
  const cudaError_t err = cudaLaunchHostFunc(stream.handle(), &holdStream, until);
  if (err != cudaSuccess) delete until;
  cuda::check(err, "cudaLaunchHostFunc (in-flight hang)", device.index);
}
#else
void stallDeviceStream(Device device, std::chrono::milliseconds length) {
  (void)length;
  throw Error("a hang in flight stalls a CUDA stream of " + device.str() +
              ", but distlab was built without CUDA");
}
#endif

}  // namespace distlab::emulator
