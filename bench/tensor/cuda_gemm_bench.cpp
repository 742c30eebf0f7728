// GEMM on a CUDA device through distlab::Tensor (cuBLAS underneath), against
// the device's fp32 peak: C[n,n] = A[n,n] B[n,n] for each --sizes n.
//   cuda_gemm_bench --sizes 1024,4096,8192 --repeats 20 [--dtype f32|f64]
// Prints one line per size: median time of --repeats products (each one
// synchronised), TFLOP/s (2 n^3 flops) and its share of the peak. The peak is
// 2 flops x FP32 lanes per SM x SMs x the SM clock the driver reports (128
// lanes per SM on sm_90; --peak-tflops overrides it for other chips). Exit 2
// on bad flags, 1 when there is no CUDA device (the reason is printed).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "bench/common/bench_args.hpp"
#include "runtime/tensor/cuda/cuda_runtime.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab {
namespace {

// fp32 lanes per SM x 2 flops x SMs x clock; 0 when the chip is not sm_90.
double fp32PeakTflops() {
  cudaDeviceProp prop{};
  cuda::check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties", 0);
  int clockKhz = 0;
  cuda::check(cudaDeviceGetAttribute(&clockKhz, cudaDevAttrClockRate, 0), "clock rate", 0);
  if (prop.major != 9) return 0;
  return 2.0 * 128 * prop.multiProcessorCount * (clockKhz * 1e3) / 1e12;
}

double medianMs(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

void runSize(int64_t n, DType dtype, int repeats, double peak) {
  Generator gen(static_cast<uint64_t>(n));
  const TensorOptions on{dtype, Device::cuda(0)};
  const Tensor a = randn({n, n}, gen, on), b = randn({n, n}, gen, on);
  const cuda::Stream stream = cuda::currentStream(0);
  Tensor c = a.mm(b);  // warm-up: cuBLAS handle, workspace, allocator
  stream.synchronize();
  std::vector<double> ms;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    c = a.mm(b);
    stream.synchronize();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                     .count());
  }
  const double med = medianMs(ms);
  const double tflops = 2.0 * n * n * n / (med * 1e-3) / 1e12;
  fmt::print("{:>6} {:>10.3f} {:>10.2f} {:>8}\n", n, med, tflops,
             peak > 0 ? fmt::format("{:.1f}%", 100 * tflops / peak) : std::string("-"));
}

}  // namespace
}  // namespace distlab

int main(int argc, char** argv) {
  using namespace distlab;
  CLI::App app{"GEMM on a CUDA device against its fp32 peak", "cuda_gemm_bench"};
  std::string sizesText = "1024,2048,4096,8192", dtypeText = "f32";
  int repeats = 20;
  double peakOverride = 0;
  app.add_option("--sizes", sizesText, "square sizes n, comma-separated (1..32768)");
  app.add_option("--repeats", repeats, "timed products per size (1..10000)")
      ->check(CLI::Range(1, 10000));
  app.add_option("--dtype", dtypeText, "f32 | f64")->check(CLI::IsMember({"f32", "f64"}));
  app.add_option("--peak-tflops", peakOverride, "the device's peak in TFLOP/s (default: fp32 "
                 "peak of an sm_90 device from its SM count and clock)")
      ->check(CLI::Range(0.001, 1e6));
  bench::parseBenchArgs(app, argc, argv);
  const std::vector<int> sizes = bench::intList(app, "--sizes", sizesText, 1, 32768);
  if (!cuda::isAvailable()) {
    fmt::print(stderr, "cuda_gemm_bench: {}\n", cuda::unavailableReason());
    return 1;
  }
  cudaDeviceProp prop{};
  cuda::check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties", 0);
  const double peak = peakOverride > 0 ? peakOverride : fp32PeakTflops();
  fmt::print("device: {} (sm_{}{}, {} SMs); peak {}\n", prop.name, prop.major, prop.minor,
             prop.multiProcessorCount,
             peak > 0 ? fmt::format("{:.1f} TFLOP/s fp32", peak) : std::string("unknown"));
  fmt::print("{:>6} {:>10} {:>10} {:>8}\n", "n", "median_ms", "TFLOP/s", "of_peak");
  const DType dtype = dtypeText == "f64" ? DType::kFloat64 : DType::kFloat32;
  for (int n : sizes) runSize(n, dtype, repeats, peak);
  return 0;
}
