// The nccl backend at world size 1 on one GPU: every collective with its
// values checked, the Work semantics (stream wait, blocking wait), abort,
// eager set-up, subgroups by ncclCommSplit, and the errors for CPU tensors and
// for reduce operations NCCL lacks. Skipped without a CUDA device.
#include <chrono>
#include <thread>

#include "runtime/comm/backend_registry.hpp"
#include "runtime/comm/backends/nccl/nccl_backend.hpp"
#include "runtime/comm/process_group.hpp"
#include "runtime/comm/store/hash_store.hpp"
#include "runtime/core/errors.hpp"
#include "tests/gpu/gpu_test_util.hpp"

namespace distlab::gputest {
namespace {

using comm::ProcessGroupPtr;
using comm::ReduceOp;

class NcclWorld1 : public CudaTest {
 protected:
  static ProcessGroupPtr makeGroup(const std::string& name,
                                   std::map<std::string, std::string> options = {}) {
    comm::ProcessGroupConfig config;
    config.store = std::make_shared<comm::HashStore>();
    config.name = name;
    config.size = 1;
    config.timeout = std::chrono::seconds(30);
    config.backendSpec = "nccl";
    return comm::createProcessGroup(config, options);
  }
  // The values on the host, read on the current stream after wait().
  static std::vector<double> host(const Tensor& t) {
    return t.to(Device::cpu()).to(DType::kFloat64).toVector<double>();
  }
  static Tensor gpu(std::vector<double> values, DType dtype = DType::kFloat32) {
    return fromVector(values).to(dtype).to(Device::cuda(0));
  }
};

TEST_F(NcclWorld1, RegisteredForCudaOnly) {
  EXPECT_EQ(comm::lookupBackend("nccl").devices, std::vector<std::string>{"cuda"});
  auto pg = makeGroup("w1_cpu");
  EXPECT_EQ(pg->backendName(), "nccl");
  try {
    pg->allreduce(fromVector(std::vector<double>{1.0}));
    FAIL() << "a CPU tensor reached the nccl backend";
  } catch (const DistBackendError& e) {
    EXPECT_NE(std::string(e.what()).find("no backend for device type cpu"), std::string::npos)
        << e.what();
  }
}

TEST_F(NcclWorld1, AllreduceEveryReduceOp) {
  auto pg = makeGroup("w1_allreduce");
  const std::vector<double> v{1, -2, 3.5, 4};
  for (ReduceOp op : {ReduceOp(ReduceOp::kSum), ReduceOp(ReduceOp::kAvg),
                      ReduceOp(ReduceOp::kProduct), ReduceOp(ReduceOp::kMin),
                      ReduceOp(ReduceOp::kMax)}) {
    Tensor t = gpu(v);
    pg->allreduce(t, {.reduceOp = op})->wait();
    EXPECT_EQ(host(t), v) << comm::reduceOpName(op);  // one rank: the input itself
  }
  Tensor p = gpu(v, DType::kFloat64);
  pg->allreduce(p, {.reduceOp = ReduceOp::premulSum(3.0)})->wait();
  EXPECT_EQ(host(p), (std::vector<double>{3, -6, 10.5, 12}));
  Tensor h = gpu(v, DType::kFloat16);
  pg->allreduce(h, {.reduceOp = ReduceOp::premulSum(2.0)})->wait();
  EXPECT_EQ(host(h), (std::vector<double>{2, -4, 7, 8}));
  Tensor i = gpu({7, 8}, DType::kInt64);
  pg->allreduce(i)->wait();
  EXPECT_EQ(host(i), (std::vector<double>{7, 8}));
  EXPECT_THROW(pg->allreduce(gpu({1}, DType::kInt32), {.reduceOp = ReduceOp::kBand}), ValueError);
}

TEST_F(NcclWorld1, RootedAndGatheringCollectives) {
  auto pg = makeGroup("w1_rooted");
  Tensor b = gpu({5, 6});
  pg->broadcast(b)->wait();
  EXPECT_EQ(host(b), (std::vector<double>{5, 6}));
  Tensor r = gpu({1, 2});
  pg->reduce(r, {.reduceOp = ReduceOp::kMax})->wait();
  EXPECT_EQ(host(r), (std::vector<double>{1, 2}));
  Tensor out = zeros({3}, onGpu());
  pg->allgather({out}, gpu({9, 8, 7}))->wait();
  EXPECT_EQ(host(out), (std::vector<double>{9, 8, 7}));
  Tensor flat = zeros({2}, onGpu());
  pg->allgatherIntoTensor(flat, gpu({4, 3}))->wait();
  EXPECT_EQ(host(flat), (std::vector<double>{4, 3}));
  Tensor c0 = zeros({1}, onGpu()), c1 = zeros({2}, onGpu());
  pg->allgatherCoalesced({{c0}, {c1}}, {gpu({1}), gpu({2, 3})})->wait();
  EXPECT_EQ(host(c1), (std::vector<double>{2, 3}));
  Tensor g = zeros({2}, onGpu());
  pg->gather({g}, gpu({6, 5}))->wait();
  EXPECT_EQ(host(g), (std::vector<double>{6, 5}));
  Tensor s = zeros({2}, onGpu());
  pg->scatter(s, {gpu({1, 9})})->wait();
  EXPECT_EQ(host(s), (std::vector<double>{1, 9}));
}

TEST_F(NcclWorld1, ReducingAndExchangingCollectives) {
  auto pg = makeGroup("w1_exchange");
  Tensor a = gpu({1, 2}), b2 = gpu({3});
  pg->allreduceCoalesced({a, b2}, {.reduceOp = ReduceOp::kSum})->wait();
  EXPECT_EQ(host(a), (std::vector<double>{1, 2}));
  Tensor rs = zeros({2}, onGpu());
  pg->reduceScatter(rs, {gpu({4, 5})})->wait();
  EXPECT_EQ(host(rs), (std::vector<double>{4, 5}));
  Tensor rst = zeros({3}, onGpu());
  pg->reduceScatterTensor(rst, gpu({1, 1, 2}), {.reduceOp = ReduceOp::kAvg})->wait();
  EXPECT_EQ(host(rst), (std::vector<double>{1, 1, 2}));
  Tensor at = zeros({2}, onGpu());
  pg->alltoall({at}, {gpu({8, 9})})->wait();
  EXPECT_EQ(host(at), (std::vector<double>{8, 9}));
  Tensor single = zeros({4, 2}, onGpu());
  pg->alltoallSingle(single, gpu({0, 1, 2, 3, 4, 5, 6, 7}).view({4, 2}))->wait();
  EXPECT_EQ(host(single), (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_TRUE(pg->barrier()->wait());
}

// wait() makes the current stream wait: a result read on that stream (to(cpu))
// is the collective's, though the host did not wait. Large enough that the
// copy would race without the stream dependency.
TEST_F(NcclWorld1, WaitOrdersTheCurrentStreamAfterTheCollective) {
  auto pg = makeGroup("w1_stream");
  Tensor t = full({1 << 22}, 2.0, onGpu());
  auto work = pg->allreduce(t, {.reduceOp = ReduceOp::premulSum(0.5)});
  EXPECT_TRUE(work->wait());
  EXPECT_EQ(t.sum().item<double>(), double(1 << 22));
  auto done = pg->barrier();
  EXPECT_TRUE(done->wait());
  EXPECT_TRUE(done->isCompleted());  // barrier waits on the host
  // The completion thread finishes the first Work once its event is done.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!work->isCompleted() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  EXPECT_TRUE(work->isSuccess());
}

TEST_F(NcclWorld1, BlockingWaitWaitsOnTheHost) {
  auto pg = makeGroup("w1_blocking", {{"nccl.blocking_wait", "1"}});
  Tensor t = full({1 << 20}, 1.0, onGpu());
  auto work = pg->allreduce(t);
  EXPECT_TRUE(work->wait());
  EXPECT_TRUE(work->isCompleted());
  EXPECT_TRUE(work->isSuccess());
}

TEST_F(NcclWorld1, EagerSetUpWithADeviceIdAndSplit) {
  auto pg = makeGroup("w1_eager", {{"nccl.device_id", "cuda:0"}});
  auto backend = std::dynamic_pointer_cast<comm::nccl_backend::NcclBackend>(
      pg->getBackend(DeviceType::kCUDA));
  ASSERT_TRUE(backend) << "decorators installed? the test expects the bare backend";
  EXPECT_EQ(backend->device(), 0);  // before any collective
  auto child = pg->split({0}, "child");
  auto childBackend = std::dynamic_pointer_cast<comm::nccl_backend::NcclBackend>(
      child->getBackend(DeviceType::kCUDA));
  ASSERT_TRUE(childBackend);
  EXPECT_TRUE(childBackend->fromSplit());  // ncclCommSplit of the parent's communicator
  EXPECT_EQ(childBackend->device(), 0);    // ready before its first collective
  Tensor t = gpu({2, 4});
  child->allreduce(t, {.reduceOp = ReduceOp::kAvg})->wait();
  EXPECT_EQ(host(t), (std::vector<double>{2, 4}));
  // A lazy parent (no communicator yet) leaves the subgroup to set up its own.
  auto lazy = makeGroup("w1_lazy");
  auto lazyChild = lazy->split({0}, "lazy_child");
  auto lazyBackend = std::dynamic_pointer_cast<comm::nccl_backend::NcclBackend>(
      lazyChild->getBackend(DeviceType::kCUDA));
  ASSERT_TRUE(lazyBackend);
  EXPECT_FALSE(lazyBackend->fromSplit());
  EXPECT_FALSE(lazyBackend->device().has_value());
  Tensor u = gpu({3});
  lazyChild->allreduce(u)->wait();
  EXPECT_EQ(host(u), (std::vector<double>{3}));
}

TEST_F(NcclWorld1, AbortRefusesLaterWork) {
  auto pg = makeGroup("w1_abort");
  Tensor t = gpu({1});
  pg->allreduce(t)->wait();
  pg->abort("test abort");
  try {
    pg->allreduce(t)->wait();
    FAIL() << "an aborted group ran an allreduce";
  } catch (const DistBackendError& e) {
    EXPECT_NE(std::string(e.what()).find("test abort"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace distlab::gputest
