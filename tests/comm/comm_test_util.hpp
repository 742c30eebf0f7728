#pragma once
// Helpers shared by the comm suites: deterministic per-rank inputs whose
// reductions are exact in every dtype (the nccl-tests idea: craft the inputs
// so the expected output is known exactly), and the sequential reference.
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/comm/process_group.hpp"
#include "runtime/comm/types.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/tensor/tensor.hpp"
#include "tests/support/spawn.hpp"
#include "tests/support/test_groups.hpp"

namespace distlab::comm::shm {
class ShmBackend;
}

namespace distlab::testing {

// Value range for (op, dtype, rank, world size) such that every reduction over
// the world is exact (no overflow, no rounding): see comm_test_util.cpp.
struct ValueRange {
  int64_t lo;
  int64_t hi;
  int64_t multiple = 1;  // values are multiples of this (AVG: the world size)
};
ValueRange valueRange(std::optional<comm::ReduceOp> op, DType dtype, int rank, int worldSize);

// fromVector that keeps an empty shape a 0-d tensor (fromVector reads {} as 1-D).
Tensor tensorFrom(const std::vector<double>& values, const Shape& shape, DType dtype);

// Deterministic tensor of `shape`: element i is hash(seed, rank, i) mapped into range.
Tensor makeInput(DType dtype, const Shape& shape, uint64_t seed, int rank, ValueRange range);

// Reduction of inputs[0..n) elementwise as the sequential reference (double math,
// exact for valueRange inputs). PREMUL_SUM uses scalars[r].
Tensor referenceReduce(const std::vector<Tensor>& inputs, comm::ReduceOp op,
                       const std::vector<double>& scalars = {});

// The premul scalar rank r uses in the suites (nccl-tests: 1 for even ranks, 2 for odd).
inline double premulScalar(int rank) { return rank % 2 == 0 ? 1.0 : 2.0; }

// Throws std::runtime_error "<what>: expected <e> but got <a>" when not equal
// (shape, dtype and every value).
void expectEqualTensor(const Tensor& actual, const Tensor& expected, const std::string& what);

std::vector<DType> allDtypes();
std::vector<comm::ReduceOp::Kind> allReduceOps();

// Why this machine refuses cross-memory attach between processes (what the shm
// backend's single-copy path needs: Note [shm single copy]), or "" when a
// process may read a child's memory with process_vm_readv. Tests of that path
// skip with the reason where the system (seccomp, Yama) forbids it.
std::string crossMemoryAttachUnavailable();

// `g`'s CPU backend as the shm backend (throws when it is another).
std::shared_ptr<comm::shm::ShmBackend> shmBackendOf(comm::ProcessGroup& g);

// Runs fn and requires it to throw E whose message contains every needle;
// returns the seconds it took (failure tests bound detection time with it).
// Set once the observed Work started (an observer added later replays it);
// waitFor returns false when `timeout` passed first.
class StartedSignal : public comm::WorkObserver {
 public:
  void onStarted(const comm::Work&) override { started_.set_value(); }
  bool waitFor(std::chrono::milliseconds timeout) {
    return future_.wait_for(timeout) == std::future_status::ready;
  }

 private:
  std::promise<void> started_;
  std::future<void> future_ = started_.get_future();
};

// Note [Work failure and the caller's tensors] for a receive, on any backend
// (run by every rank of a two-rank group `g`): rank 0's irecv from rank 1 is
// aborted while it waits; only then does rank 1 send. The aborted receive's
// tensor stays as it was and the message goes to rank 0's next receive with
// that peer and tag. Throws on rank 0 when either does not hold.
void checkFailedReceiveLeavesTensorAlone(RankContext& ctx, comm::ProcessGroup& g);

template <typename E>
double expectThrows(const std::function<void()>& fn, const std::vector<std::string>& needles) {
  Stopwatch watch;
  try {
    fn();
  } catch (const E& e) {
    const std::string msg = e.what();
    for (const auto& n : needles) {
      if (msg.find(n) == std::string::npos) {
        throw std::runtime_error("error message lacks '" + n + "': " + msg);
      }
    }
    return watch.elapsedSeconds();
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("wrong exception type: ") + e.what());
  }
  throw std::runtime_error("expected an exception");
}

}  // namespace distlab::testing
