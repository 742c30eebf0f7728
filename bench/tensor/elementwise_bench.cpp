// The non-GEMM kernels of an MLP training step on [32, 1024] activations and
// 1024x1024 parameters: bias add (broadcast), ReLU, bias-grad sum over the
// batch, the SGD update p.add_(g, -lr), and a full-tensor sum. Reports bytes/s.
#include <benchmark/benchmark.h>

#include "bench/common/bench_args.hpp"

#include "runtime/tensor/tensor.hpp"

namespace distlab {
namespace {

void setBytes(benchmark::State& state, int64_t bytesPerIter) {
  state.SetBytesProcessed(state.iterations() * bytesPerIter);
}

void BM_AddBias(benchmark::State& state) {
  Generator gen(1);
  const Tensor x = randn({32, 1024}, gen);
  const Tensor b = randn({1024}, gen);
  for (auto _ : state) benchmark::DoNotOptimize(x.add(b).rawData());
  setBytes(state, 2 * 32 * 1024 * 4);
}
BENCHMARK(BM_AddBias);

void BM_Relu(benchmark::State& state) {
  Generator gen(2);
  const Tensor x = randn({32, 1024}, gen);
  for (auto _ : state) benchmark::DoNotOptimize(x.relu().rawData());
  setBytes(state, 2 * 32 * 1024 * 4);
}
BENCHMARK(BM_Relu);

void BM_ReluInplace(benchmark::State& state) {
  Generator gen(2);
  Tensor x = randn({32, 1024}, gen);
  for (auto _ : state) {
    x.relu_();
    benchmark::ClobberMemory();
  }
  setBytes(state, 2 * 32 * 1024 * 4);
}
BENCHMARK(BM_ReluInplace);

void BM_MulInplace(benchmark::State& state) {
  Generator gen(2);
  Tensor x = randn({32, 1024}, gen);
  const Tensor y = randn({32, 1024}, gen);
  for (auto _ : state) {
    x.mul_(y);
    benchmark::ClobberMemory();
  }
  setBytes(state, 3 * 32 * 1024 * 4);
}
BENCHMARK(BM_MulInplace);

void BM_SumBatch(benchmark::State& state) {
  Generator gen(3);
  const Tensor g = randn({32, 1024}, gen);
  for (auto _ : state) benchmark::DoNotOptimize(g.sum({0}).rawData());
  setBytes(state, 32 * 1024 * 4);
}
BENCHMARK(BM_SumBatch);

void BM_SgdUpdate(benchmark::State& state) {
  Generator gen(4);
  Tensor p = randn({1024, 1024}, gen);
  const Tensor g = randn({1024, 1024}, gen);
  for (auto _ : state) {
    p.add_(g, -0.01);
    benchmark::ClobberMemory();
  }
  setBytes(state, 3 * 1024 * 1024 * 4);
}
BENCHMARK(BM_SgdUpdate);

void BM_SumAll(benchmark::State& state) {
  Generator gen(5);
  const Tensor g = randn({1024, 1024}, gen);
  for (auto _ : state) benchmark::DoNotOptimize(g.sum().rawData());
  setBytes(state, 1024 * 1024 * 4);
}
BENCHMARK(BM_SumAll);

}  // namespace
}  // namespace distlab

// Note [Bench command lines] (bench/common/bench_args.hpp): --help, and exit 2
// on an unknown flag or a malformed --benchmark_* value.
int main(int argc, char** argv) {
  CLI::App app{"Elementwise tensor kernels (Google Benchmark)", "elementwise_bench"};
  distlab::bench::parseBenchArgs(app, argc, argv, {.googleBenchmark = true});
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
