// One rank's side of `distlab bench collectives`: buffers, verification,
// timed iterations, cross-rank aggregation.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "distlab/config.hpp"
#include "emulator/bench/bench_ops.hpp"
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

// Elements of this rank's output that differ from what the op must leave
// there (0 when its output is not defined on this rank).
int64_t countWrong(const OpBuffers& b) {
  if (!b.checked) return 0;
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

BenchRow benchOne(ProcessGroup& g, const std::string& backend, const std::string& mode,
                  const std::string& op, uint64_t bytes, const CollectivesBenchOptions& options) {
  const int n = g.size();
  const uint64_t count = benchElementCount(op, bytes, n);
  BenchRow row{backend, mode, op, count * 4, count};
  const Device dev = benchDevice(g, options.device);
  OpBuffers b = makeBenchOp(g, op, count, mode == "async", dev);
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
      uint64_t previousCount = 0;
      for (uint64_t bytes = options.minBytes; bytes <= options.maxBytes; bytes *= 2) {
        // Note [Bench operations]: a size that rounds to the previous one's
        // elements is that row again.
        const uint64_t count = benchElementCount(op, bytes, group.size());
        if (count != 0 && count == previousCount) continue;
        previousCount = count;
        try {
          rows.push_back(benchOne(group, backend, mode, op, bytes, options));
          if (rows.back().count == 0) break;  // barrier: one row (Note [Bench operations])
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
