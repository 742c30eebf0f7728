// GEMM through distlab::Tensor (OpenBLAS underneath). Run single-threaded for
// comparable numbers:
//   OPENBLAS_NUM_THREADS=1 gemm_bench --benchmark_out=reports/gemm_bench.json
//       --benchmark_out_format=json
// Each case reports a GFLOP/s counter (2*M*N*K flops per product).
#include <benchmark/benchmark.h>

#include "bench/common/bench_args.hpp"

#include "runtime/tensor/tensor.hpp"

namespace distlab {
namespace {

void setFlops(benchmark::State& state, double m, double n, double k) {
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * m * n * k * state.iterations() / 1e9,
                                                  benchmark::Counter::kIsRate);
}

// Square fp32/fp64 mm: C[n,n] = A[n,n] B[n,n].
void BM_MmSquare(benchmark::State& state, DType dtype) {
  const int64_t n = state.range(0);
  Generator gen(1);
  const Tensor a = randn({n, n}, gen, {dtype});
  const Tensor b = randn({n, n}, gen, {dtype});
  for (auto _ : state) benchmark::DoNotOptimize(a.mm(b).rawData());
  setFlops(state, n, n, n);
}
BENCHMARK_CAPTURE(BM_MmSquare, f32, DType::kFloat32)->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MmSquare, f64, DType::kFloat64)->Arg(1024)->Unit(benchmark::kMillisecond);

// The MLP shapes (Linear(1024, 1024), batch 32):
//   forward      y[32,1024]  = x[32,1024] . W^T   (W is [out, in]; W^T via CblasTrans)
//   grad input   gx[32,1024] = gy[32,1024] . W
//   grad weight  gW[1024,1024] = gy^T . x         (gy^T via CblasTrans)
void BM_LinearForward(benchmark::State& state) {
  Generator gen(2);
  const Tensor x = randn({32, 1024}, gen);
  const Tensor w = randn({1024, 1024}, gen);
  for (auto _ : state) benchmark::DoNotOptimize(x.matmul(w.t()).rawData());
  setFlops(state, 32, 1024, 1024);
}
BENCHMARK(BM_LinearForward)->Unit(benchmark::kMicrosecond);

void BM_LinearGradInput(benchmark::State& state) {
  Generator gen(3);
  const Tensor gy = randn({32, 1024}, gen);
  const Tensor w = randn({1024, 1024}, gen);
  for (auto _ : state) benchmark::DoNotOptimize(gy.matmul(w).rawData());
  setFlops(state, 32, 1024, 1024);
}
BENCHMARK(BM_LinearGradInput)->Unit(benchmark::kMicrosecond);

void BM_LinearGradWeight(benchmark::State& state) {
  Generator gen(4);
  const Tensor gy = randn({32, 1024}, gen);
  const Tensor x = randn({32, 1024}, gen);
  for (auto _ : state) benchmark::DoNotOptimize(gy.t().matmul(x).rawData());
  setFlops(state, 1024, 1024, 32);
}
BENCHMARK(BM_LinearGradWeight)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace distlab

// Note [Bench command lines] (bench/common/bench_args.hpp): --help, and exit 2
// on an unknown flag or a malformed --benchmark_* value.
int main(int argc, char** argv) {
  CLI::App app{"Matrix multiply kernels (Google Benchmark)", "gemm_bench"};
  distlab::bench::parseBenchArgs(app, argc, argv, {.googleBenchmark = true});
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
