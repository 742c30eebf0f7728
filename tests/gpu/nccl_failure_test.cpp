// The nccl backend's timeouts and its debug layer: a collective stuck behind a
// blocked stream times out and aborts the communicator (by the backend itself,
// by a blocking wait, and by the watchdog), and the flight recorder records
// NCCL work like any other backend's. World size 1; skipped without a GPU.
#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "runtime/comm/debug/debug_install.hpp"
#include "runtime/comm/debug/flight_recorder.hpp"
#include "runtime/comm/process_group.hpp"
#include "runtime/comm/store/hash_store.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/core/errors.hpp"
#include "tests/gpu/gpu_test_util.hpp"
#include "tests/support/temp_dir.hpp"

namespace distlab::gputest {
namespace {

using comm::ProcessGroupPtr;

// Holds a stream (a host function that waits on it) until opened; the host
// function gives up after 60 s so no test can leave the stream blocked.
class StreamGate {
 public:
  explicit StreamGate(const cuda::Stream& stream) : stream_(stream) {
    cuda::check(cudaLaunchHostFunc(stream.handle(), &StreamGate::hold, this),
                "cudaLaunchHostFunc", stream.device());
  }
  ~StreamGate() {
    open();
    cuda::Event drained;
    drained.record(stream_);
    if (!drained.synchronize(std::chrono::seconds(30))) {
      ADD_FAILURE() << "the stream was still busy 30 s after the gate opened";
    }
  }
  void open() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      open_ = true;
    }
    cv_.notify_all();
  }

 private:
  static void hold(void* self) {
    auto* gate = static_cast<StreamGate*>(self);
    std::unique_lock<std::mutex> lock(gate->mutex_);
    gate->cv_.wait_for(lock, std::chrono::seconds(60), [&] { return gate->open_; });
  }
  cuda::Stream stream_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
};

class NcclFailure : public CudaTest {
 protected:
  static ProcessGroupPtr makeGroup(const std::string& name, std::chrono::milliseconds timeout,
                                   std::map<std::string, std::string> options = {}) {
    comm::ProcessGroupConfig config;
    config.store = std::make_shared<comm::HashStore>();
    config.name = name;
    config.size = 1;
    config.timeout = timeout;
    config.backendSpec = "nccl";
    return comm::createProcessGroup(config, options);
  }
  static void waitCompleted(const comm::WorkPtr& work, std::chrono::seconds limit) {
    const Deadline deadline = Deadline::after(limit);
    while (!work->isCompleted() && !deadline.expired()) std::this_thread::yield();
    ASSERT_TRUE(work->isCompleted()) << "the Work did not complete in " << limit.count() << " s";
  }
  static std::string errorOf(const comm::WorkPtr& work) {
    try {
      std::rethrow_exception(work->exception());
    } catch (const std::exception& e) {
      return e.what();
    }
  }
};

TEST_F(NcclFailure, TimeoutFailsTheWorkAndAbortsTheCommunicator) {
  auto pg = makeGroup("fail_timeout", std::chrono::milliseconds(1000));
  Tensor t = full({256}, 1.0, onGpu());
  comm::WorkPtr work;
  {
    StreamGate gate(cuda::currentStream(0));  // the collective waits for this stream
    work = pg->allreduce(t);
    EXPECT_TRUE(work->wait());  // returns at once: only the stream waits
    waitCompleted(work, std::chrono::seconds(20));
    EXPECT_THROW(std::rethrow_exception(work->exception()), DistTimeoutError);
    EXPECT_NE(errorOf(work).find("the NCCL communicator was aborted"), std::string::npos)
        << errorOf(work);
  }
  try {
    pg->allreduce(t);
    FAIL() << "a timed-out group took new work";
  } catch (const DistBackendError& e) {
    EXPECT_NE(std::string(e.what()).find("refuses new work"), std::string::npos) << e.what();
  }
}

TEST_F(NcclFailure, BlockingWaitTimesOutOnTheHost) {
  auto pg = makeGroup("fail_blocking", std::chrono::milliseconds(1000),
                      {{"nccl.blocking_wait", "true"}});
  Tensor t = full({256}, 1.0, onGpu());
  StreamGate gate(cuda::currentStream(0));
  auto work = pg->allreduce(t);
  Stopwatch watch;
  EXPECT_THROW(work->wait(), DistTimeoutError);
  EXPECT_LT(watch.elapsedSeconds(), 10.0);
  EXPECT_TRUE(pg->getBackend(DeviceType::kCUDA)->errorReason().has_value());
}

TEST_F(NcclFailure, FlightRecorderAndWatchdogSeeNcclWork) {
  testing::TempDir dumps;  // the watchdog's flight-recorder dump lands here
  const std::string previousPrefix = comm::flightRecorderDumpPrefix();
  comm::setFlightRecorderDumpPrefix(dumps.file("fr_rank_"));
  comm::installDebugDecorators();
  struct Restore {
    std::string prefix;
    ~Restore() {
      comm::uninstallDebugDecorators();
      comm::setFlightRecorderDumpPrefix(prefix);
    }
  } restore{previousPrefix};
  auto pg = makeGroup("fail_fr", std::chrono::milliseconds(1000));
  Tensor t = full({64}, 2.0, onGpu());
  auto ok = pg->allreduce(t);
  ok->wait();
  waitCompleted(ok, std::chrono::seconds(10));
  comm::WorkPtr stuck;
  {
    StreamGate gate(cuda::currentStream(0));
    stuck = pg->allreduce(t);
    waitCompleted(stuck, std::chrono::seconds(20));
  }
  // The watchdog (monitor decorator) fails it first, in its own words.
  EXPECT_NE(errorOf(stuck).find("Watchdog caught collective operation timeout"),
            std::string::npos)
      << errorOf(stuck);
  const auto dump = nlohmann::json::parse(comm::flightRecorderJson(0));
  std::vector<std::string> states;
  for (const auto& e : dump["entries"]) {
    if (e["pg_id"] != "fail_fr") continue;
    EXPECT_EQ(e["profiling_name"], "nccl:all_reduce");
    states.push_back(e["state"]);
  }
  EXPECT_EQ(states, (std::vector<std::string>{"completed", "failed"}));
  EXPECT_TRUE(pg->getBackend(DeviceType::kCUDA)->errorReason().has_value());  // aborted
}

}  // namespace
}  // namespace distlab::gputest
