#include "tests/comm/comm_test_util.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <future>
#include <stdexcept>

#include "runtime/comm/backends/shm/shm_backend.hpp"
#include "runtime/comm/backends/shm/shm_single_copy.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::testing {

using comm::ReduceOp;

ValueRange valueRange(std::optional<ReduceOp> op, DType dtype, int rank, int worldSize) {
  const bool isBool = dtype == DType::kBool;
  const bool isUnsigned = dtype == DType::kUInt8;
  if (isBool) return {0, 1};
  if (!op) return isUnsigned ? ValueRange{0, 200} : ValueRange{-100, 100};
  switch (op->kind) {
    case ReduceOp::kSum:
    case ReduceOp::kPremulSum: return isUnsigned ? ValueRange{0, 15} : ValueRange{-8, 8};
    case ReduceOp::kAvg: return {-8, 8, worldSize};
    case ReduceOp::kProduct:
      if (rank == 0) return isUnsigned ? ValueRange{0, 3} : ValueRange{-3, 3};
      return isUnsigned ? ValueRange{0, 1} : ValueRange{-1, 1};
    case ReduceOp::kMin:
    case ReduceOp::kMax: return isUnsigned ? ValueRange{0, 200} : ValueRange{-100, 100};
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor:
      if (dtype == DType::kInt8) return {-128, 127};
      if (isUnsigned) return {0, 255};
      return {-1000000, 1000000};
  }
  return {-8, 8};
}

namespace {
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
}  // namespace

Tensor tensorFrom(const std::vector<double>& values, const Shape& shape, DType dtype) {
  if (!shape.empty()) return fromVector<double>(values, shape, TensorOptions{dtype});
  return fromVector<double>(values, {1}, TensorOptions{dtype}).reshape({});
}

Tensor makeInput(DType dtype, const Shape& shape, uint64_t seed, int rank, ValueRange range) {
  const int64_t n = shapeNumel(shape);
  std::vector<double> values(n);
  const uint64_t span = static_cast<uint64_t>(range.hi - range.lo + 1);
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t h = mix(seed * 1315423911ULL + mix(static_cast<uint64_t>(rank) * 7919 + i));
    values[i] = static_cast<double>((range.lo + static_cast<int64_t>(h % span)) * range.multiple);
  }
  return tensorFrom(values, shape, dtype);
}

Tensor referenceReduce(const std::vector<Tensor>& inputs, ReduceOp op,
                       const std::vector<double>& scalars) {
  const int n = static_cast<int>(inputs.size());
  const DType dtype = inputs[0].dtype();
  std::vector<std::vector<double>> v;
  for (const auto& t : inputs) v.push_back(t.toVector<double>());
  std::vector<double> out(v[0].size());
  for (size_t i = 0; i < out.size(); ++i) {
    double acc = op.kind == ReduceOp::kPremulSum ? v[0][i] * scalars[0] : v[0][i];
    int64_t bits = static_cast<int64_t>(v[0][i]);
    for (int r = 1; r < n; ++r) {
      const double x = v[r][i];
      switch (op.kind) {
        case ReduceOp::kSum:
        case ReduceOp::kAvg: acc += x; break;
        case ReduceOp::kPremulSum: acc += x * scalars[r]; break;
        case ReduceOp::kProduct: acc *= x; break;
        case ReduceOp::kMin: acc = std::min(acc, x); break;
        case ReduceOp::kMax: acc = std::max(acc, x); break;
        case ReduceOp::kBand: bits &= static_cast<int64_t>(x); break;
        case ReduceOp::kBor: bits |= static_cast<int64_t>(x); break;
        case ReduceOp::kBxor: bits ^= static_cast<int64_t>(x); break;
      }
    }
    if (op.kind == ReduceOp::kBand || op.kind == ReduceOp::kBor || op.kind == ReduceOp::kBxor) {
      acc = static_cast<double>(bits);
    }
    if (op.kind == ReduceOp::kAvg) acc /= n;
    if (dtype == DType::kBool) acc = acc != 0 ? 1 : 0;
    out[i] = acc;
  }
  return tensorFrom(out, inputs[0].sizes(), dtype);
}

void expectEqualTensor(const Tensor& actual, const Tensor& expected, const std::string& what) {
  if (actual.dtype() == expected.dtype() && actual.sizes() == expected.sizes() &&
      actual.equal(expected)) {
    return;
  }
  auto clip = [](std::string s) { return s.size() > 600 ? s.substr(0, 600) + "..." : s; };
  throw std::runtime_error(fmt::format("{}: expected {} but got {}", what,
                                       clip(expected.toString()), clip(actual.toString())));
}

std::vector<DType> allDtypes() {
  return {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16, DType::kInt8,
          DType::kUInt8,   DType::kInt32,   DType::kInt64,   DType::kBool};
}

std::vector<ReduceOp::Kind> allReduceOps() {
  return {ReduceOp::kSum,  ReduceOp::kAvg, ReduceOp::kProduct, ReduceOp::kMin,      ReduceOp::kMax,
          ReduceOp::kBand, ReduceOp::kBor, ReduceOp::kBxor,    ReduceOp::kPremulSum};
}

std::string crossMemoryAttachUnavailable() {
  static const std::string reason = [] {
    const uint64_t word = 0x5eed5eed5eed5eedULL;
    int pipeFds[2];
    if (pipe(pipeFds) != 0) return std::string("pipe failed: ") + std::strerror(errno);
    const pid_t child = fork();
    if (child < 0) {
      const int err = errno;
      close(pipeFds[0]);
      close(pipeFds[1]);
      return std::string("fork failed: ") + std::strerror(err);
    }
    if (child == 0) {  // waits (bounded by the parent's close) until the parent has read
      close(pipeFds[1]);
      char c;
      [[maybe_unused]] const ssize_t got = read(pipeFds[0], &c, 1);
      _exit(0);
    }
    close(pipeFds[0]);
    uint64_t seen = 0;  // `word` sits at the same address in the child
    const int err = comm::shm::readProcessMemory(child, reinterpret_cast<uintptr_t>(&word), &seen,
                                                 sizeof(seen));
    close(pipeFds[1]);  // the child's read returns: it exits
    waitpid(child, nullptr, 0);
    if (err != 0) {
      return std::string("process_vm_readv from a child process failed: ") + std::strerror(err);
    }
    if (seen != word) return std::string("process_vm_readv from a child read other bytes");
    return std::string();
  }();
  return reason;
}

void checkFailedReceiveLeavesTensorAlone(RankContext& ctx, comm::ProcessGroup& g) {
  constexpr int64_t kNumel = 1 << 14;
  if (ctx.rank == 1) {
    ctx.store->wait({"receive_failed"}, std::chrono::seconds(20));
    g.send(full({kNumel}, 7.0), 0, {.tag = 5});
    return;
  }
  Tensor t = full({kNumel}, -1.0);
  auto work = g.irecv(t, 1, {.tag = 5});
  auto started = std::make_shared<StartedSignal>();
  work->addObserver(started);
  if (!started->waitFor(std::chrono::seconds(20))) throw std::runtime_error("never started");
  work->abort("test");
  expectThrows<DistBackendError>([&] { work->wait(); }, {"aborted: test"});
  ctx.store->setString("receive_failed", "1");
  Tensor next = empty({kNumel});
  if (g.recv(next, 1, {.tag = 5}) != 1) throw std::runtime_error("the next receive's source");
  expectEqualTensor(next, full({kNumel}, 7.0), "the message, taken by the next receive");
  expectEqualTensor(t, full({kNumel}, -1.0), "the failed receive's tensor");
}

std::shared_ptr<comm::shm::ShmBackend> shmBackendOf(comm::ProcessGroup& g) {
  auto backend = std::dynamic_pointer_cast<comm::shm::ShmBackend>(g.getBackend(DeviceType::kCPU));
  if (!backend) throw std::runtime_error("not an shm backend");
  return backend;
}

}  // namespace distlab::testing
