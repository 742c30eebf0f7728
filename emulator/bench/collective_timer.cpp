// One rank's side of `distlab bench collectives`: buffers, verification,
// timed iterations, cross-rank aggregation.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "distlab/config.hpp"
#include "emulator/bench/collectives_bench.hpp"
#include "runtime/comm/op_names.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/core/errors.hpp"
#if DISTLAB_HAVE_CUDA
#include "runtime/tensor/cuda/cuda_runtime.hpp"
#endif

namespace distlab::emulator {
namespace {

using comm::ProcessGroup;

// A bench op's OpType: its name is torch.distributed's (runtime/comm/op_names.hpp).
comm::OpType benchOpType(const std::string& op) {
  return comm::parseApiName(op).value_or(comm::OpType::kUnknown);
}

float inputValue(int rank, uint64_t i) {
  return static_cast<float>(static_cast<int64_t>((rank * 7 + i * 3) % 13) - 6);
}

// Note [Bench on CUDA]
// A group whose only backend serves CUDA tensors (nccl) is benchmarked on the
// GPU: buffers on cuda:(rank mod devices), inputs made on the host and copied,
// results read back through host copies, and the host waits for the device
// after each operation (Work::wait on nccl only orders the current stream), so
// every time includes the device's work.
// `requested` (--device): "cpu", "cuda" (cuda:(rank mod devices): CUDA
// tensors on a host backend are staged through pinned memory, Note [CUDA
// tensors on host backends]) or "auto" (cuda only for a CUDA-only group).
Device benchDevice(ProcessGroup& g, const std::string& requested) {
  const bool cudaOnly = !g.hasBackend(DeviceType::kCPU) && g.hasBackend(DeviceType::kCUDA);
  if (requested == "cpu" || (requested == "auto" && !cudaOnly)) {
    if (cudaOnly) throw ValueError("bench collectives: --device cpu, but this backend serves CUDA "
                                   "tensors only; use --device cuda or auto");
    return Device::cpu();
  }
#if DISTLAB_HAVE_CUDA
  const int count = cuda::deviceCount();
  if (count == 0) throw DistBackendError("bench collectives: " + cuda::unavailableReason());
  return Device::cuda(g.rank() % count);
#else
  throw DistBackendError("bench collectives: distlab was built without CUDA");
#endif
}

// Waits on the host for the device's current stream (nothing on the CPU).
void syncDevice(const Device& device) {
#if DISTLAB_HAVE_CUDA
  if (device.isCuda()) cuda::currentStream(device.index).synchronize();
#else
  (void)device;
#endif
}

Tensor rankInputOn(int rank, uint64_t count, const Device& device) {
  Tensor t = empty({static_cast<int64_t>(count)}, TensorOptions{DType::kFloat32});
  float* p = t.data<float>();
  for (uint64_t i = 0; i < count; ++i) p[i] = inputValue(rank, i);
  return device.isCpu() ? t : t.to(device);
}

// The buffers of one op at one size, and how to run / verify it.
struct OpBuffers {
  Tensor in;
  Tensor out;
  std::function<void()> run;
  std::function<float(uint64_t)> expected;  // expected out[i]
};

// `async`: asyncOp=true (the progress thread's path) and Work::wait, else the
// blocking path (asyncOp=false, run inline on the caller). `op` is one of
// kBenchOps (validated before any rank starts).
OpBuffers makeOp(ProcessGroup& g, const std::string& op, uint64_t count, bool async,
                 const Device& dev) {
  const int n = g.size(), me = g.rank();
  const uint64_t m = count / n;  // per-rank part for the split ops
  const TensorOptions f32{DType::kFloat32, dev};
  const auto rankInput = [&dev](int rank, uint64_t c) { return rankInputOn(rank, c, dev); };
  const comm::OpType type = benchOpType(op);
  OpBuffers b;
  if (type == comm::OpType::kAllreduce) {
    b.in = rankInput(me, count);
    b.out = b.in;
    b.run = [&g, async, t = b.in] { g.allreduce(t, {.asyncOp = async})->wait(); };
    b.expected = [n](uint64_t i) {
      float s = 0;
      for (int r = 0; r < n; ++r) s += inputValue(r, i);
      return s;
    };
  } else if (type == comm::OpType::kAllgatherBase) {
    b.in = rankInput(me, m);
    b.out = empty({static_cast<int64_t>(count)}, f32);
    b.run = [&g, async, in = b.in, out = b.out] {
      g.allgatherIntoTensor(out, in, {.asyncOp = async})->wait();
    };
    b.expected = [m](uint64_t i) { return inputValue(static_cast<int>(i / m), i % m); };
  } else if (type == comm::OpType::kReduceScatterBase) {
    b.in = rankInput(me, count);
    b.out = empty({static_cast<int64_t>(m)}, f32);
    b.run = [&g, async, in = b.in, out = b.out] {
      g.reduceScatterTensor(out, in, {.asyncOp = async})->wait();
    };
    b.expected = [n, m, me](uint64_t i) {
      float s = 0;
      for (int r = 0; r < n; ++r) s += inputValue(r, me * m + i);
      return s;
    };
  } else if (type == comm::OpType::kBroadcast) {
    b.in = rankInput(me, count);
    b.out = b.in;
    b.run = [&g, async, t = b.in] { g.broadcast(t, {.rootRank = 0, .asyncOp = async})->wait(); };
    b.expected = [](uint64_t i) { return inputValue(0, i); };
  } else if (type == comm::OpType::kAlltoallBase) {
    b.in = rankInput(me, count);
    b.out = empty({static_cast<int64_t>(count)}, f32);
    b.run = [&g, async, in = b.in, out = b.out] {
      g.alltoallSingle(out, in, {}, {}, {.asyncOp = async})->wait();
    };
    b.expected = [m, me](uint64_t i) { return inputValue(static_cast<int>(i / m), me * m + i % m); };
  } else {
    throw ValueError(fmt::format("bench collectives: unknown op '{}' (valid: {})", op,
                                 fmt::join(kBenchOps, ", ")));
  }
  return b;
}

int64_t countWrong(const OpBuffers& b) {
  const Tensor host = b.out.device().isCpu() ? b.out : b.out.to(Device::cpu());
  const float* p = host.data<float>();
  int64_t wrong = 0;
  for (int64_t i = 0; i < b.out.numel(); ++i) wrong += p[i] != b.expected(i) ? 1 : 0;
  return wrong;
}

struct CrossRankTimes {
  std::vector<double> slowest;    // per iteration, the slowest rank's (us)
  std::vector<double> rankMeans;  // per rank, its mean iteration time (us)
};

// Every rank's local iteration times (us), gathered on every rank.
CrossRankTimes gatherTimes(ProcessGroup& g, const std::vector<double>& local, const Device& dev) {
  const int64_t iters = static_cast<int64_t>(local.size());
  Tensor mine = fromVector<double>(local).to(dev);
  Tensor all = empty({g.size() * iters}, TensorOptions{DType::kFloat64, dev});
  g.allgatherIntoTensor(all, mine, {.asyncOp = false})->wait();
  CrossRankTimes out{std::vector<double>(iters, 0.0), std::vector<double>(g.size(), 0.0)};
  const Tensor host = all.to(Device::cpu());
  const double* p = host.data<double>();
  for (int r = 0; r < g.size(); ++r) {
    for (int64_t i = 0; i < iters; ++i) {
      out.slowest[i] = std::max(out.slowest[i], p[r * iters + i]);
      out.rankMeans[r] += p[r * iters + i] / static_cast<double>(iters);
    }
  }
  return out;
}

// Note [nccl-tests output]: the ranks' means reduced as -a 0..3 would.
void setRankMeans(BenchRow& row, const std::vector<double>& means) {
  row.rank0MeanUs = means.front();
  row.rankMeanMinUs = *std::min_element(means.begin(), means.end());
  row.rankMeanMaxUs = *std::max_element(means.begin(), means.end());
  double sum = 0;
  for (double m : means) sum += m;
  row.rankMeanAvgUs = sum / static_cast<double>(means.size());
}

// float32 elements in a `bytes` buffer; the split ops round down to a whole
// part per rank (at least one).
uint64_t elementCount(const std::string& op, uint64_t bytes, int n) {
  const uint64_t count = std::max<uint64_t>(1, bytes / 4);
  const comm::OpType type = benchOpType(op);
  if (type == comm::OpType::kAllreduce || type == comm::OpType::kBroadcast) return count;
  return std::max<uint64_t>(n, count - count % n);
}

BenchRow benchOne(ProcessGroup& g, const std::string& backend, const std::string& mode,
                  const std::string& op, uint64_t bytes, const CollectivesBenchOptions& options) {
  const int n = g.size();
  const uint64_t count = elementCount(op, bytes, n);
  BenchRow row{backend, mode, op, count * 4, count};
  const Device dev = benchDevice(g, options.device);
  OpBuffers b = makeOp(g, op, count, mode == "async", dev);
  b.run();  // verification pass on the crafted inputs (a warm-up without --check)
  row.checked = options.check;
  if (options.check) {
    Tensor wrong = full({1}, countWrong(b), TensorOptions{DType::kInt64, dev});
    g.allreduce(wrong, {.asyncOp = false})->wait();
    row.wrong = wrong.item<int64_t>();
  }
  Stopwatch warm;
  for (int i = 0; i < options.warmup; ++i) b.run();
  syncDevice(dev);
  // Iteration count: rank 0's estimate, shared so every rank runs the same number.
  int iters = options.iters;
  if (iters <= 0) {
    const double per = warm.elapsedSeconds() / std::max(1, options.warmup);
    iters = static_cast<int>(std::clamp(0.2 / std::max(per, 1e-7), 5.0, 2000.0));
  }
  Tensor itersT = full({1}, static_cast<int64_t>(iters), TensorOptions{DType::kInt64, dev});
  g.broadcast(itersT, {.rootRank = 0, .asyncOp = false})->wait();
  iters = static_cast<int>(itersT.item<int64_t>());
  g.barrier({.asyncOp = false})->wait();
  std::vector<double> local(iters);
  for (int i = 0; i < iters; ++i) {
    const int64_t start = monotonicNowNs();
    b.run();
    syncDevice(dev);  // Note [Bench on CUDA]
    local[i] = static_cast<double>(monotonicNowNs() - start) / 1e3;
  }
  CrossRankTimes gathered = gatherTimes(g, local, dev);
  setRankMeans(row, gathered.rankMeans);
  std::vector<double>& times = gathered.slowest;
  row.iters = iters;
  double sum = 0;
  for (double t : times) sum += t;
  row.avgUs = sum / iters;
  std::nth_element(times.begin(), times.begin() + iters / 2, times.end());
  row.p50Us = times[iters / 2];
  row.algbwGBps = static_cast<double>(row.bytes) / (row.p50Us * 1e3);
  row.busbwGBps = row.algbwGBps * busBandwidthFactor(op, n);
  return row;
}

}  // namespace

double busBandwidthFactor(const std::string& op, int n) {
  const comm::OpType type = benchOpType(op);
  if (type == comm::OpType::kAllreduce) return 2.0 * (n - 1) / n;
  if (type == comm::OpType::kBroadcast) return 1.0;
  return static_cast<double>(n - 1) / n;
}

// Freshly forked ranks start out sharing one core until the scheduler spreads
// them, and their waits have not warmed up; without this the first row measured
// (8 B all_reduce) read 13 us where every later small message took under 2 us.
void warmUpGroup(ProcessGroup& group, const Device& dev) {
  Tensor t = full({1}, 1.0f, TensorOptions{DType::kFloat32, dev});
  const Deadline until = Deadline::after(Milliseconds(200));
  int64_t go = 1;
  while (go != 0) {
    for (int i = 0; i < 100; ++i) group.allreduce(t, {.asyncOp = false})->wait();
    Tensor flag = full({1}, static_cast<int64_t>(until.expired() ? 0 : 1),
                       TensorOptions{DType::kInt64, dev});
    group.broadcast(flag, {.rootRank = 0, .asyncOp = false})->wait();
    go = flag.item<int64_t>();
  }
}

std::vector<BenchRow> benchRank(ProcessGroup& group, const std::string& backend,
                                const CollectivesBenchOptions& options) {
  std::vector<BenchRow> rows;
  warmUpGroup(group, benchDevice(group, options.device));
  std::vector<std::string> modes{"blocking"};
  if (options.async) modes.push_back("async");
  for (const auto& mode : modes) {
    for (const auto& op : options.ops) {
      for (uint64_t bytes = options.minBytes; bytes <= options.maxBytes; bytes *= 2) {
        try {
          rows.push_back(benchOne(group, backend, mode, op, bytes, options));
        } catch (const DistBackendError& e) {
          if (std::string(e.what()).find("does not support") == std::string::npos) throw;
          BenchRow row{backend, mode, op, bytes, bytes / 4};
          row.error = e.what();
          rows.push_back(row);
          break;  // the same for every size
        }
      }
    }
  }
  return rows;
}

}  // namespace distlab::emulator
