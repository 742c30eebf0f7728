// Every operation through every decorator (Note [Operations as data]). Each
// OpType is issued through each decorator around a backend that records what
// reaches it, and the test checks both that the operation arrived unchanged
// and that the decorator did its own work on it:
//   ForwardingBackend  (the base)      forwards type, seq, root, peer, tag, tensors;
//   FaultBackend       (faults)        logs it ("op" / "p2p" line); skips any collective;
//   LinkBackend        (link model)    completes it no earlier than the model's time;
//   MonitorBackend     (watchdog, FR)  records it in the flight recorder;
//   ProcessGroupWrapper (DETAIL)       fails it when the other rank issued another
//                                      operation (collectives) or another dtype (send/recv);
//   CUDA staging (built with CUDA, on a GPU) hands the inner backend host tensors.
// A decorator that lets one operation type pass without its work fails here
// for that type. The one exemption, stated where it applies: DETAIL does not
// check recv from any source (its sender is unknown until it arrives).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "emulator/faults/fault_backend.hpp"
#include "emulator/link/link_backend.hpp"
#include "runtime/comm/debug/flight_recorder.hpp"
#include "runtime/comm/debug/monitor_backend.hpp"
#include "runtime/comm/debug/process_group_wrapper.hpp"
#include "runtime/comm/store/hash_store.hpp"
#include "runtime/core/errors.hpp"
#include "tests/support/temp_dir.hpp"
#include "distlab/config.hpp"
#if DISTLAB_HAVE_CUDA
#include "runtime/comm/cuda_staging_backend.hpp"
#include "runtime/tensor/cuda/cuda_runtime.hpp"
#endif

namespace distlab::emulator {
namespace {

using namespace comm;  // NOLINT(google-build-using-namespace): the test speaks comm
using std::chrono::milliseconds;

constexpr int kWorld = 2;
constexpr int64_t kChunk = 4;

// What reached the innermost backend.
struct Seen {
  OpType type = OpType::kUnknown;
  uint64_t seq = 0;
  int root = -1, peer = -1, tag = 0;
  size_t inputs = 0, outputs = 0;
  bool allOnCpu = true;
};

class RecordingBackend : public Backend {
 public:
  explicit RecordingBackend(int rank) : Backend(rank, kWorld) {}
  std::string name() const override { return "recording"; }

  std::vector<Seen> seen() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return seen_;
  }

  WorkPtr broadcast(const Tensor& t, const BroadcastOptions& o) override {
    return done(OpType::kBroadcast, o.seq, {t}, {t}, o.rootRank);
  }
  WorkPtr allreduce(const Tensor& t, const AllreduceOptions& o) override {
    return done(OpType::kAllreduce, o.seq, {t}, {t});
  }
  WorkPtr allreduceCoalesced(const std::vector<Tensor>& ts,
                             const AllreduceCoalescedOptions& o) override {
    return done(OpType::kAllreduceCoalesced, o.seq, ts, ts);
  }
  WorkPtr reduce(const Tensor& t, const ReduceOptions& o) override {
    return done(OpType::kReduce, o.seq, {t}, {t}, o.rootRank);
  }
  WorkPtr allgather(const std::vector<Tensor>& outs, const Tensor& in,
                    const AllgatherOptions& o) override {
    return done(OpType::kAllgather, o.seq, {in}, outs);
  }
  WorkPtr allgatherIntoTensor(const Tensor& out, const Tensor& in,
                              const AllgatherOptions& o) override {
    return done(OpType::kAllgatherBase, o.seq, {in}, {out});
  }
  WorkPtr allgatherCoalesced(const std::vector<std::vector<Tensor>>& outs,
                             const std::vector<Tensor>& ins, const AllgatherOptions& o) override {
    std::vector<Tensor> flat;
    for (const auto& l : outs) flat.insert(flat.end(), l.begin(), l.end());
    return done(OpType::kAllgatherCoalesced, o.seq, ins, flat);
  }
  WorkPtr gather(const std::vector<Tensor>& outs, const Tensor& in,
                 const GatherOptions& o) override {
    return done(OpType::kGather, o.seq, {in}, outs, o.rootRank);
  }
  WorkPtr scatter(const Tensor& out, const std::vector<Tensor>& ins,
                  const ScatterOptions& o) override {
    return done(OpType::kScatter, o.seq, ins, {out}, o.rootRank);
  }
  WorkPtr reduceScatter(const Tensor& out, const std::vector<Tensor>& ins,
                        const ReduceScatterOptions& o) override {
    return done(OpType::kReduceScatter, o.seq, ins, {out});
  }
  WorkPtr reduceScatterTensor(const Tensor& out, const Tensor& in,
                              const ReduceScatterOptions& o) override {
    return done(OpType::kReduceScatterBase, o.seq, {in}, {out});
  }
  WorkPtr alltoall(const std::vector<Tensor>& outs, const std::vector<Tensor>& ins,
                   const AllToAllOptions& o) override {
    return done(OpType::kAlltoall, o.seq, ins, outs);
  }
  WorkPtr alltoallBase(const Tensor& out, const Tensor& in, const std::vector<int64_t>&,
                       const std::vector<int64_t>&, const AllToAllOptions& o) override {
    return done(OpType::kAlltoallBase, o.seq, {in}, {out});
  }
  WorkPtr barrier(const BarrierOptions& o) override {
    return done(OpType::kBarrier, o.seq, {}, {});
  }
  WorkPtr send(const Tensor& t, int dst, const SendOptions& o) override {
    return done(OpType::kSend, o.seq, {t}, {}, -1, dst, o.tag);
  }
  WorkPtr recv(const Tensor& t, int src, const RecvOptions& o) override {
    return done(OpType::kRecv, o.seq, {}, {t}, -1, src, o.tag);
  }
  WorkPtr recvAnysource(const Tensor& t, const RecvOptions& o) override {
    return done(OpType::kRecvAnysource, o.seq, {}, {t}, -1, -1, o.tag);
  }

 private:
  WorkPtr done(OpType type, uint64_t seq, const std::vector<Tensor>& ins,
               const std::vector<Tensor>& outs, int root = -1, int peer = -1, int tag = 0) {
    Seen s{type, seq, root, peer, tag, ins.size(), outs.size(), true};
    for (const auto* list : {&ins, &outs}) {
      for (const auto& t : *list) s.allOnCpu = s.allOnCpu && !t.device().isCuda();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      seen_.push_back(s);
    }
    return Work::completed(makeWorkInfo("g", rank(), type, seq, ins, outs, milliseconds(1000),
                                        peer, tag),
                           outs);
  }

  mutable std::mutex mutex_;
  std::vector<Seen> seen_;
};

// The operation's arguments at rank `rank` of kWorld; rank 0 is the root.
struct Call {
  OpType type;
  int rank = 0;
  uint64_t seq = 1;
  DType dtype = DType::kFloat32;
  Device device = Device::cpu();
  milliseconds timeout{5000};

  TensorOptions options() const { return TensorOptions{}.withDType(dtype).withDevice(device); }
  Tensor chunk() const { return zeros({kChunk}, options()); }
  Tensor whole() const { return zeros({kChunk * kWorld}, options()); }
  std::vector<Tensor> perRank() const { return {chunk(), chunk()}; }
  std::vector<Tensor> atRoot() const { return rank == 0 ? perRank() : std::vector<Tensor>{}; }
  int peer() const { return 1 - rank; }
};

// The operation's expected inputs / outputs counts at the innermost backend.
struct Counts {
  size_t inputs, outputs;
};

template <typename Options>
Options opts(const Call& c) {
  Options o;
  o.timeout = c.timeout;
  o.seq = c.seq;
  return o;
}

template <typename Options>
Options rooted(const Call& c) {
  Options o = opts<Options>(c);
  o.rootRank = 0;
  return o;
}

WorkPtr issue(Backend& b, const Call& c) {
  switch (c.type) {
    case OpType::kBroadcast: return b.broadcast(c.chunk(), rooted<BroadcastOptions>(c));
    case OpType::kAllreduce: return b.allreduce(c.chunk(), opts<AllreduceOptions>(c));
    case OpType::kAllreduceCoalesced:
      return b.allreduceCoalesced(c.perRank(), opts<AllreduceCoalescedOptions>(c));
    case OpType::kReduce: return b.reduce(c.chunk(), rooted<ReduceOptions>(c));
    case OpType::kAllgather: return b.allgather(c.perRank(), c.chunk(), opts<AllgatherOptions>(c));
    case OpType::kAllgatherBase:
      return b.allgatherIntoTensor(c.whole(), c.chunk(), opts<AllgatherOptions>(c));
    case OpType::kAllgatherCoalesced:
      return b.allgatherCoalesced({c.perRank(), c.perRank()}, c.perRank(),
                                  opts<AllgatherOptions>(c));
    case OpType::kGather: return b.gather(c.atRoot(), c.chunk(), rooted<GatherOptions>(c));
    case OpType::kScatter: return b.scatter(c.chunk(), c.atRoot(), rooted<ScatterOptions>(c));
    case OpType::kReduceScatter:
      return b.reduceScatter(c.chunk(), c.perRank(), opts<ReduceScatterOptions>(c));
    case OpType::kReduceScatterBase:
      return b.reduceScatterTensor(c.chunk(), c.whole(), opts<ReduceScatterOptions>(c));
    case OpType::kAlltoall: return b.alltoall(c.perRank(), c.perRank(), opts<AllToAllOptions>(c));
    case OpType::kAlltoallBase:
      return b.alltoallBase(c.whole(), c.whole(), {kChunk, kChunk}, {kChunk, kChunk},
                            opts<AllToAllOptions>(c));
    case OpType::kBarrier: return b.barrier(opts<BarrierOptions>(c));
    case OpType::kSend: return b.send(c.chunk(), c.peer(), opts<SendOptions>(c));
    case OpType::kRecv: return b.recv(c.chunk(), c.peer(), opts<RecvOptions>(c));
    case OpType::kRecvAnysource: return b.recvAnysource(c.chunk(), opts<RecvOptions>(c));
    case OpType::kUnknown: break;
  }
  throw ValueError("issue: not an operation");
}

// Counts the innermost backend must see for `type` at rank 0.
Counts expectedCounts(OpType type) {
  switch (type) {
    case OpType::kAllreduceCoalesced: return {2, 2};
    case OpType::kAllgather: return {1, kWorld};
    case OpType::kAllgatherCoalesced: return {2, 2 * kWorld};
    case OpType::kGather: return {1, kWorld};
    case OpType::kScatter: return {kWorld, 1};
    case OpType::kReduceScatter: return {kWorld, 1};
    case OpType::kAlltoall: return {kWorld, kWorld};
    case OpType::kBarrier: return {0, 0};
    case OpType::kSend: return {1, 0};
    case OpType::kRecv:
    case OpType::kRecvAnysource: return {0, 1};
    default: return {1, 1};
  }
}

// Issues `c` through `decorator` and checks the innermost backend saw it as issued.
void expectForwardedUnchanged(Backend& decorator, const RecordingBackend& inner, const Call& c) {
  const size_t before = inner.seen().size();
  issue(decorator, c)->wait();
  const auto seen = inner.seen();
  ASSERT_EQ(seen.size(), before + 1) << opTypeName(c.type) << " did not reach the backend once";
  const Seen& s = seen.back();
  EXPECT_EQ(s.type, c.type);
  EXPECT_EQ(s.seq, c.seq);
  EXPECT_EQ(s.root, hasRoot(c.type) ? 0 : -1);
  EXPECT_EQ(s.peer, c.type == OpType::kSend || c.type == OpType::kRecv ? c.peer() : -1);
  EXPECT_EQ(s.inputs, expectedCounts(c.type).inputs);
  EXPECT_EQ(s.outputs, expectedCounts(c.type).outputs);
}

class EveryOperation : public ::testing::TestWithParam<OpType> {};

// The base class alone: the Operation round trip loses nothing.
class PassThrough : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
};

TEST_P(EveryOperation, ForwardingKeepsTheOperation) {
  auto inner = std::make_shared<RecordingBackend>(0);
  PassThrough decorator(inner);
  expectForwardedUnchanged(decorator, *inner, {GetParam()});
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_P(EveryOperation, FaultInjectionLogsIt) {
  testing::TempDir dir;
  auto log = std::make_shared<EventLog>(dir.file("events.log"));
  auto plan = std::make_shared<FaultPlan>(std::vector<FaultSpec>{}, 0, log, milliseconds(1000));
  auto inner = std::make_shared<RecordingBackend>(0);
  FaultBackend decorator(inner, plan, "g");
  const Call c{GetParam(), 0, 7};
  expectForwardedUnchanged(decorator, *inner, c);
  const std::string line =
      isPointToPoint(c.type) ? fmt::format(" p2p {} ", opTypeName(c.type))
                             : fmt::format(" op 7 {} ", opTypeName(c.type));
  EXPECT_NE(readFile(dir.file("events.log")).find(line), std::string::npos)
      << "no '" << line << "' line in the event log";
}

TEST_P(EveryOperation, FaultInjectionSkipsEveryCollective) {
  const Call c{GetParam(), 0, 3};
  if (isPointToPoint(c.type)) {
    GTEST_SKIP() << "fault triggers count collectives only (fault_backend.hpp)";
  }
  FaultSpec skip;
  skip.kind = "skip_collective";
  skip.ranks = {0};
  skip.atSeq = 3;
  auto plan = std::make_shared<FaultPlan>(std::vector<FaultSpec>{skip}, 0,
                                          std::make_shared<EventLog>(""), milliseconds(1000));
  auto inner = std::make_shared<RecordingBackend>(0);
  FaultBackend decorator(inner, plan, "g");
  WorkPtr work = issue(decorator, c);
  EXPECT_TRUE(work->isCompleted());
  EXPECT_TRUE(inner->seen().empty()) << opTypeName(c.type) << " was issued despite the skip";
}

TEST_P(EveryOperation, LinkEmulationDelaysIt) {
  const auto latency = milliseconds(20);
  auto inner = std::make_shared<RecordingBackend>(0);
  LinkBackend decorator(inner, LinkModel{"", 20'000.0, 0.0});
  const auto start = std::chrono::steady_clock::now();
  expectForwardedUnchanged(decorator, *inner, {GetParam()});
  EXPECT_GE(std::chrono::steady_clock::now() - start, latency)
      << opTypeName(GetParam()) << " completed before the modelled latency";
}

TEST_P(EveryOperation, MonitorRecordsIt) {
  setFlightRecorderBufferSize(16);
  BackendContext ctx;
  ctx.store = std::make_shared<HashStore>();
  ctx.groupName = "coverage";
  ctx.size = kWorld;
  auto inner = std::make_shared<RecordingBackend>(0);
  auto decorator = std::make_shared<MonitorBackend>(inner, ctx);
  ASSERT_NE(decorator->recorder(), nullptr);
  expectForwardedUnchanged(*decorator, *inner, {GetParam(), 0, 5});
  const auto entries = decorator->recorder()->entries();
  ASSERT_EQ(entries.size(), 1u) << opTypeName(GetParam()) << " was not recorded";
  EXPECT_EQ(entries.back().opType, GetParam());
}

// Rank 0 issues the operation under test; rank 1 issues a different
// collective (collectives) or the matching side with another dtype (send /
// recv). Both must fail with DETAIL's mismatch report.
TEST_P(EveryOperation, DetailChecksIt) {
  const OpType type = GetParam();
  if (type == OpType::kRecvAnysource) {
    GTEST_SKIP() << "DETAIL does not check recv from any source (process_group_wrapper.hpp)";
  }
  auto store = std::make_shared<HashStore>();
  std::vector<std::string> errors(kWorld);
  auto rankMain = [&](int rank) {
    BackendContext ctx;
    ctx.store = store;
    ctx.rank = rank;
    ctx.size = kWorld;
    ctx.groupName = "coverage_" + std::string(opTypeName(type));
    ctx.globalRanks = {0, 1};
    auto wrapper = std::make_shared<ProcessGroupWrapper>(
        std::make_shared<RecordingBackend>(rank), ctx);
    Call c{type, rank, 1};
    c.timeout = milliseconds(3000);
    if (rank == 1) {
      if (type == OpType::kSend) c.type = OpType::kRecv;
      else if (type == OpType::kRecv) c.type = OpType::kSend;
      else c.type = type == OpType::kBarrier ? OpType::kAllreduce : OpType::kBarrier;
      c.dtype = DType::kFloat64;
    }
    try {
      issue(*wrapper, c)->wait();
    } catch (const DistBackendError& e) {
      errors[rank] = e.what();
    } catch (const std::exception& e) {
      errors[rank] = std::string("unexpected error: ") + e.what();
    }
  };
  std::thread other(rankMain, 1);
  rankMain(0);
  other.join();
  const std::string expected = std::string("Detected mismatch between ") +
                               (isPointToPoint(type) ? "point-to-point" : "collectives");
  for (int r = 0; r < kWorld; ++r) {
    EXPECT_NE(errors[r].find(expected), std::string::npos)
        << "rank " << r << " of " << opTypeName(type) << ": '" << errors[r] << "'";
  }
}

#if DISTLAB_HAVE_CUDA
TEST_P(EveryOperation, CudaStagingHandsHostTensorsToTheBackend) {
  if (cuda::deviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  auto inner = std::make_shared<RecordingBackend>(0);
  BackendPtr decorator = makeCudaStagingBackend(inner);
  Call c{GetParam()};
  c.device = Device::cuda(0);
  expectForwardedUnchanged(*decorator, *inner, c);
  EXPECT_TRUE(inner->seen().back().allOnCpu) << opTypeName(c.type) << " reached it on the GPU";
}
#endif

INSTANTIATE_TEST_SUITE_P(Decorators, EveryOperation, ::testing::ValuesIn(kAllOperationTypes),
                         [](const auto& param) { return std::string(opTypeName(param.param)); });

}  // namespace
}  // namespace distlab::emulator
