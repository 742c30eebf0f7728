// The cost of a trace call site (Note [Tracing off costs one branch],
// runtime/core/trace.hpp): a scoped Span and an instant with tracing off and
// on, and a module forward (Linear 64x64, batch 8) with tracing off and on.
// Reports nanoseconds per call; the overlap benchmark reports the cost per
// training step.
#include <benchmark/benchmark.h>

#include "bench/common/bench_args.hpp"
#include "runtime/core/trace.hpp"
#include "runtime/nn/layers.hpp"

namespace distlab {
namespace {

void setTracing(bool on) {
  if (on) {
    trace::start();
  } else {
    trace::stop();
    trace::clear();
  }
}

void BM_Span(benchmark::State& state) {
  setTracing(state.range(0) != 0);
  const std::string name = "layers.0";
  int64_t n = 0;
  for (auto _ : state) {
    trace::Span span(trace::Category::kCompute, "forward ", name);
    benchmark::DoNotOptimize(++n);
    // Bounded memory when on: clear well before the per-thread cap.
    if (state.range(0) != 0 && (n & 0xffff) == 0) trace::clear();
  }
  setTracing(false);
}
BENCHMARK(BM_Span)->Arg(0)->Arg(1)->ArgName("tracing");

void BM_LinearForward(benchmark::State& state) {
  Generator gen(1);
  nn::Linear layer(64, 64, gen);
  const Tensor x = randn({8, 64}, gen);
  setTracing(state.range(0) != 0);
  int64_t n = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(layer.forward(x).rawData());
    if (state.range(0) != 0 && (++n & 0xffff) == 0) trace::clear();
  }
  setTracing(false);
}
BENCHMARK(BM_LinearForward)->Arg(0)->Arg(1)->ArgName("tracing");

}  // namespace
}  // namespace distlab

int main(int argc, char** argv) {
  CLI::App app{"Trace call-site cost, off and on (Google Benchmark)", "trace_bench"};
  distlab::bench::parseBenchArgs(app, argc, argv, {.googleBenchmark = true});
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
