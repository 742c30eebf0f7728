#include "emulator/scenario/scenario_device.hpp"

#include <fmt/format.h>

#include "distlab/config.hpp"
#include "runtime/core/errors.hpp"
#if DISTLAB_HAVE_CUDA
#include "runtime/tensor/cuda/cuda_runtime.hpp"
#endif

namespace distlab::emulator {

namespace {

// Visible CUDA devices, or why there are none usable.
struct CudaDevices {
  int count = 0;
  std::string whyNone;
};

CudaDevices visibleCudaDevices() {
#if DISTLAB_HAVE_CUDA
  // Safe in the runner: the ranks it starts exec a fresh image, so CUDA
  // initialised here is never inherited across a fork.
  const int count = cuda::deviceCount();
  return {count, count > 0 ? std::string() : cuda::unavailableReason()};
#else
  return {0, "distlab was built without CUDA (no toolkit under /usr/local/cuda when it was "
             "configured); rebuild with the CUDA toolkit installed"};
#endif
}

}  // namespace

std::optional<std::string> deviceSkipReason(const Scenario& s) {
  if (s.device != "cuda") return std::nullopt;
  const CudaDevices gpus = visibleCudaDevices();
  if (gpus.count == 0) return gpus.whyNone;
  if (s.backend == "nccl" && s.worldSize > gpus.count) {
    return fmt::format("backend nccl needs one GPU per rank: world_size {} but this machine has "
                       "{} CUDA device{} (NCCL refuses two ranks of one communicator on one "
                       "device; use backend = \"shm\" to share a GPU)",
                       s.worldSize, gpus.count, gpus.count == 1 ? "" : "s");
  }
  return std::nullopt;
}

Device scenarioRankDevice(const Scenario& s, int rank) {
  if (s.device != "cuda") return Device::cpu();
  const CudaDevices gpus = visibleCudaDevices();
  if (gpus.count == 0) throw DistBackendError(fmt::format("device = \"cuda\": {}", gpus.whyNone));
  return Device::cuda(rank % gpus.count);
}

}  // namespace distlab::emulator
