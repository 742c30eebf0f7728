// TCP store throughput: set / get / add round trips per second with 1, 4 and
// 16 concurrent clients (one thread and one connection per client) against
// one in-process TCPStoreServer (its single event-loop thread serves all).
//
//   build/<dir>/bench/store/tcp_store_bench --benchmark_out=reports/store_bench.json
//       --benchmark_out_format=json   (one command line)
#include <benchmark/benchmark.h>

#include "bench/common/bench_args.hpp"

#include <memory>
#include <mutex>
#include <string>

#include "runtime/comm/store/tcp_store.hpp"
#include "runtime/comm/store/tcp_store_server.hpp"

namespace {

using distlab::comm::Bytes;
using distlab::comm::TCPStore;
using distlab::comm::TCPStoreOptions;
using distlab::comm::TCPStoreServer;

int serverPort() {
  static std::unique_ptr<TCPStoreServer> server = std::make_unique<TCPStoreServer>(0);
  return server->port();
}

std::unique_ptr<TCPStore> connect() {
  TCPStoreOptions o;
  o.host = "127.0.0.1";
  o.port = serverPort();
  return std::make_unique<TCPStore>(o);
}

void BM_TcpStoreSet(benchmark::State& state) {
  auto store = connect();
  std::string key = std::to_string(state.thread_index());
  key.insert(0, "set/");
  Bytes value(static_cast<size_t>(state.range(0)), 7);
  for (auto _ : state) store->set(key, value);
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

void BM_TcpStoreGet(benchmark::State& state) {
  auto store = connect();
  std::string key = std::to_string(state.thread_index());
  key.insert(0, "get/");
  store->set(key, Bytes(static_cast<size_t>(state.range(0)), 7));
  for (auto _ : state) benchmark::DoNotOptimize(store->get(key));
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

void BM_TcpStoreAddSharedCounter(benchmark::State& state) {
  auto store = connect();
  for (auto _ : state) benchmark::DoNotOptimize(store->add("counter", 1));
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK(BM_TcpStoreSet)->Arg(64)->Threads(1)->Threads(4)->Threads(16)->UseRealTime();
BENCHMARK(BM_TcpStoreGet)->Arg(64)->Threads(1)->Threads(4)->Threads(16)->UseRealTime();
BENCHMARK(BM_TcpStoreAddSharedCounter)->Threads(1)->Threads(4)->Threads(16)->UseRealTime();

}  // namespace

// Note [Bench command lines] (bench/common/bench_args.hpp): --help, and exit 2
// on an unknown flag or a malformed --benchmark_* value.
int main(int argc, char** argv) {
  CLI::App app{"TCP store set/get/add throughput (Google Benchmark)", "tcp_store_bench"};
  distlab::bench::parseBenchArgs(app, argc, argv, {.googleBenchmark = true});
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
