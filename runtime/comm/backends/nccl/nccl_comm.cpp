#include "runtime/comm/backends/nccl/nccl_comm.hpp"

#include <fmt/format.h>

#include <cstring>
#include <thread>

#include "runtime/comm/backends/nccl/nccl_util.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/logging.hpp"

namespace distlab::comm::nccl_backend {
namespace {

ncclConfig_t nonBlockingConfig() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

// Polls a non-blocking communicator until its last call is done; false when
// `deadline` passed first. Throws on an NCCL error.
bool pollReady(ncclComm_t comm, std::string_view what, const Deadline& deadline) {
  for (;;) {
    ncclResult_t state = ncclSuccess;
    checkNccl(ncclCommGetAsyncError(comm, &state), "ncclCommGetAsyncError", comm);
    if (state == ncclSuccess) return true;
    if (state != ncclInProgress) checkNccl(state, what, comm);
    if (deadline.expired()) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

ncclUniqueId fetchUniqueId(Store& store, const std::string& key, int rank, Milliseconds timeout) {
  ncclUniqueId id;
  if (rank == 0) {
    checkNccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    const auto* bytes = reinterpret_cast<const uint8_t*>(&id);
    store.set(key, Bytes(bytes, bytes + sizeof(id)));
    return id;
  }
  store.wait({key}, timeout);
  const Bytes value = store.get(key);
  if (value.size() != sizeof(id)) {
    throw DistBackendError(fmt::format("nccl: store key '{}' holds {} bytes, not an NCCL unique id",
                                       key, value.size()));
  }
  std::memcpy(&id, value.data(), sizeof(id));
  return id;
}

}  // namespace

NcclComm::NcclComm(ncclComm_t comm, int device, cuda::Stream stream, std::string groupName)
    : comm_(comm), device_(device), stream_(stream), groupName_(std::move(groupName)) {}

cuda::Stream NcclComm::newStream(int device) {
  cuda::setDevice(device);
  cudaStream_t handle = nullptr;
  cuda::check(cudaStreamCreateWithFlags(&handle, cudaStreamNonBlocking), "cudaStreamCreate",
              device);
  return cuda::Stream(device, handle);
}

std::shared_ptr<NcclComm> NcclComm::create(Store& store, const std::string& key, int rank,
                                           int size, int device, Milliseconds timeout,
                                           const std::string& groupName) {
  const Deadline deadline = Deadline::after(timeout);
  const ncclUniqueId id = fetchUniqueId(store, key, rank, timeout);
  cuda::setDevice(device);
  ncclConfig_t config = nonBlockingConfig();
  ncclComm_t comm = nullptr;
  const std::string what = fmt::format("nccl: group '{}' rank {} of {} on cuda:{}: "
                                       "ncclCommInitRankConfig", groupName, rank, size, device);
  ncclResult_t r = ncclCommInitRankConfig(&comm, size, id, rank, &config);
  try {
    if (r != ncclInProgress) checkNccl(r, what, comm);
    if (!pollReady(comm, what, deadline)) {
      throw DistTimeoutError(fmt::format("{} timed out after {} ms (the other ranks did not join)",
                                         what, timeout.count()));
    }
  } catch (...) {
    if (comm) ncclCommAbort(comm);
    throw;
  }
  return std::shared_ptr<NcclComm>(new NcclComm(comm, device, newStream(device), groupName));
}

std::shared_ptr<NcclComm> NcclComm::split(int color, int key, Milliseconds timeout,
                                          const std::string& groupName) {
  const Deadline deadline = Deadline::after(timeout);
  cuda::setDevice(device_);
  ncclConfig_t config = nonBlockingConfig();
  ncclComm_t child = nullptr;
  const std::string what = fmt::format("nccl: ncclCommSplit of group '{}' into '{}'",
                                       groupName_, groupName);
  complete(ncclCommSplit(comm_, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &child, &config),
           what, deadline);
  if (color < 0 || child == nullptr) return nullptr;
  try {
    if (!pollReady(child, what, deadline)) {
      throw DistTimeoutError(fmt::format("{} timed out after {} ms", what, timeout.count()));
    }
  } catch (...) {
    ncclCommAbort(child);
    throw;
  }
  return std::shared_ptr<NcclComm>(new NcclComm(child, device_, newStream(device_), groupName));
}

NcclComm::~NcclComm() {
  destroy(Milliseconds(2000));
  if (stream_.handle()) cudaStreamDestroy(stream_.handle());
}

void NcclComm::complete(ncclResult_t result, std::string_view what, const Deadline& deadline) {
  if (aborted_.load()) {
    throw DistBackendError(fmt::format("{}: the communicator of group '{}' was aborted", what,
                                       groupName_));
  }
  if (result != ncclInProgress) checkNccl(result, what, comm_);
  if (!pollReady(comm_, what, deadline)) {
    abort();
    throw DistTimeoutError(fmt::format("{}: group '{}': NCCL call did not complete in time; "
                                       "communicator aborted", what, groupName_));
  }
}

std::optional<std::string> NcclComm::asyncError() const {
  if (aborted_.load()) return "the communicator was aborted";  // never wait for an abort
  std::lock_guard<std::mutex> lock(lifecycleMutex_);  // abort/destroy free the communicator
  if (destroyed_) return "the communicator was destroyed";
  ncclResult_t state = ncclSuccess;
  if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess) return "ncclCommGetAsyncError failed";
  if (state == ncclSuccess || state == ncclInProgress) return std::nullopt;
  return fmt::format("{} ({})", ncclGetErrorString(state), ncclGetLastError(comm_));
}

// Note [NCCL abort may block]
// ncclCommAbort waits for an NCCL kernel already enqueued behind a stream that
// is blocked (seen on the H100 with NCCL 2.28: until the stream moved on), so
// the first caller may block here. Every later caller (a blocking wait that
// timed out, the watchdog, abort()) returns at once: the flag is taken before
// the lock.
void NcclComm::abort() {
  if (aborted_.exchange(true)) return;
  std::lock_guard<std::mutex> lock(lifecycleMutex_);
  if (destroyed_) return;
  destroyed_ = true;
  DL_LOG(WARNING, "nccl: aborting the communicator of group '{}'", groupName_);
  ncclCommAbort(comm_);
}

void NcclComm::destroy(Milliseconds timeout) {
  if (aborted_.load()) return;  // aborted (or being aborted): nothing left to destroy
  std::lock_guard<std::mutex> lock(lifecycleMutex_);
  if (destroyed_) return;
  destroyed_ = true;
  cuda::setDevice(device_);
  const ncclResult_t r = ncclCommFinalize(comm_);
  bool finalized = false;
  try {
    finalized = (r == ncclSuccess || r == ncclInProgress) &&
                pollReady(comm_, "ncclCommFinalize", Deadline::after(timeout));
  } catch (const std::exception& e) {
    DL_LOG(WARNING, "nccl: group '{}': {}", groupName_, e.what());
  }
  if (finalized) {
    ncclCommDestroy(comm_);
    return;
  }
  aborted_.store(true);
  ncclCommAbort(comm_);
}

}  // namespace distlab::comm::nccl_backend
