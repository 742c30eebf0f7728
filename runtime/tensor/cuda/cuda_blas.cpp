// GEMM on CUDA through cuBLAS: the "bmm" kernel every matmul, mm, bmm and
// linear reaches (linalg.cpp hands it [B, M, K] x [B, K, N]). cuBLAS is
// opened on first use (Note [cuBLAS loaded on first use]).
#include <string>
#include <unordered_map>

#include "runtime/core/errors.hpp"
#include "runtime/tensor/cuda/cublas_library.hpp"
#include "runtime/tensor/cuda/cuda_kernels.hpp"
#include "runtime/tensor/cuda/cuda_runtime.hpp"

namespace distlab::cuda {
namespace {

void checkBlas(cublasStatus_t status, const char* what, int device) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw Error(std::string(what) + " failed on cuda:" + std::to_string(device) + ": cuBLAS status " +
              std::to_string(static_cast<int>(status)));
}

// One handle per (thread, device); bound to the current stream at each call.
cublasHandle_t handleFor(int device) {
  thread_local std::unordered_map<int, cublasHandle_t> handles;
  auto it = handles.find(device);
  if (it == handles.end()) {
    setDevice(device);
    cublasHandle_t h = nullptr;
    checkBlas(cublas().create(&h), "cublasCreate", device);
    it = handles.emplace(device, h).first;
  }
  checkBlas(cublas().setStream(it->second, currentStream(device).handle()), "cublasSetStream",
            device);
  return it->second;
}

// Row-major C[b] = A[b] B[b] is column-major C^T = B^T A^T: swap the operands.
void bmm(const KernelArgs& args) {
  const Tensor& out = args.outputs[0];
  const Tensor a = args.inputs[0].contiguous();
  const Tensor b = args.inputs[1].contiguous();
  const int64_t batch = a.size(0), m = a.size(1), k = a.size(2), n = b.size(2);
  const int device = out.device().index;
  if (batch * m * n == 0) return;
  if (k == 0) {
    Tensor(out).zero_();
    return;
  }
  cublasHandle_t h = handleFor(device);
  const auto im = static_cast<int>(m), in = static_cast<int>(n), ik = static_cast<int>(k);
  if (out.dtype() == DType::kFloat32) {
    const float one = 1.0f, zero = 0.0f;
    checkBlas(
        cublas().sgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, in, im, ik, &one, b.data<float>(),
                                     in, k * n, a.data<float>(), ik, m * k, &zero,
                                     out.data<float>(), in, m * n, static_cast<int>(batch)),
        "cublasSgemmStridedBatched", device);
  } else if (out.dtype() == DType::kFloat64) {
    const double one = 1.0, zero = 0.0;
    checkBlas(
        cublas().dgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, in, im, ik, &one,
                                     b.data<double>(), in, k * n, a.data<double>(), ik, m * k,
                                     &zero, out.data<double>(), in, m * n, static_cast<int>(batch)),
        "cublasDgemmStridedBatched", device);
  } else {
    throw Error(std::string("bmm is not implemented for device ") + out.device().str() +
                " with dtype " + std::string(dtypeName(out.dtype())));
  }
}

}  // namespace

void registerBlasKernels() { registerKernel("bmm", DeviceType::kCUDA, &bmm); }

}  // namespace distlab::cuda
