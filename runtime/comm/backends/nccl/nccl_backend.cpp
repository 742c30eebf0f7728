// NcclBackend: options, lazy communicator, the launch path, lifecycle,
// registration. The operations are in nccl_backend_ops.cpp / _p2p.cpp.
#include "runtime/comm/backends/nccl/nccl_backend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "runtime/comm/backend_registry.hpp"
#include "runtime/comm/backends/nccl/nccl_util.hpp"
#include "runtime/comm/work_completion.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/logging.hpp"

namespace distlab::comm {

namespace nccl_backend {
namespace {

// The backend option "nccl.blocking_wait" wins over `fromEnv`
// (TORCH_NCCL_BLOCKING_WAIT, also DISTLAB_NCCL_BLOCKING_WAIT, as read into
// BackendContext::env).
bool resolveBlockingWait(const std::map<std::string, std::string>& options, bool fromEnv) {
  return readOption(options, "nccl.blocking_wait", fromEnv, parseOptionFlag);
}

std::optional<int> resolveDeviceId(const std::map<std::string, std::string>& options) {
  auto it = options.find("nccl.device_id");
  if (it == options.end()) return std::nullopt;
  const Device d = parseDevice(it->second.find(':') == std::string::npos && !it->second.empty() &&
                                       std::isdigit(static_cast<unsigned char>(it->second[0]))
                                   ? "cuda:" + it->second
                                   : it->second);
  if (!d.isCuda()) {
    throw ValueError(fmt::format("nccl: option nccl.device_id='{}' must name a CUDA device "
                                 "(\"cuda:N\" or N)", it->second));
  }
  return d.index;
}

struct SplitTable {
  std::mutex mutex;
  std::map<std::string, NcclCommPtr> comms;  // "<child group>#<global rank>"
};

SplitTable& splitTable() {
  static SplitTable table;
  return table;
}

std::string splitKey(const std::string& group, int globalRank) {
  return fmt::format("{}#{}", group, globalRank);
}

NcclCommPtr takeSplitComm(const std::string& group, int globalRank) {
  SplitTable& t = splitTable();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = t.comms.find(splitKey(group, globalRank));
  if (it == t.comms.end()) return nullptr;
  NcclCommPtr comm = std::move(it->second);
  t.comms.erase(it);
  return comm;
}

}  // namespace

void NcclCall::check(ncclResult_t result, std::string_view what) const {
  comm.complete(result, what, deadline);
}

void NcclCall::grouped(const std::function<void()>& body) const {
  check(ncclGroupStart(), "ncclGroupStart");
  try {
    body();
  } catch (...) {
    ncclGroupEnd();
    throw;
  }
  check(ncclGroupEnd(), "ncclGroupEnd");
}

NcclBackend::NcclBackend(const BackendContext& context)
    : Backend(context.rank, context.size),
      ctx_(context),
      blockingWait_(resolveBlockingWait(context.options, context.env.ncclBlockingWait)),
      deviceId_(resolveDeviceId(context.options)) {
  completion_ = std::make_unique<CompletionThread>(
      ctx_.groupName, [this]() -> std::optional<std::string> {
        std::lock_guard<std::mutex> lock(commMutex_);
        return comm_ ? comm_->asyncError() : std::nullopt;
      },
      [this](const FailureReason& why) { markFailed(why); },
      [this](const std::string& why) { abortWith({FailureReason::kBackendError, why}); });
  if (!ctx_.globalRanks.empty()) {  // Note [NCCL subgroups by split]
    comm_ = takeSplitComm(ctx_.groupName, ctx_.globalRanks.at(ctx_.rank));
    fromSplit_ = comm_ != nullptr;
  }
  if (!comm_ && deviceId_) ensureComm(*deviceId_);  // eager set-up (PyTorch's device_id)
}

NcclBackend::~NcclBackend() {
  try {
    shutdown(Milliseconds(5000));
  } catch (...) {
  }
}

std::optional<int> NcclBackend::device() const {
  std::lock_guard<std::mutex> lock(commMutex_);
  if (comm_) return comm_->device();
  return std::nullopt;
}

void NcclBackend::prepareSplit(const std::string& childName, const std::vector<int>& ranks) {
  std::lock_guard<std::mutex> lock(commMutex_);
  if (!comm_ || errorReason()) return;  // the subgroup sets up its own, lazily
  const auto it = std::find(ranks.begin(), ranks.end(), ctx_.rank);
  const int color = it == ranks.end() ? -1 : 0;
  const int key = static_cast<int>(it - ranks.begin());
  NcclCommPtr child = comm_->split(color, key, ctx_.timeout, childName);
  if (!child) return;
  SplitTable& t = splitTable();
  std::lock_guard<std::mutex> tableLock(t.mutex);
  t.comms[splitKey(childName, ctx_.globalRanks.at(ctx_.rank))] = std::move(child);
}

NcclComm& NcclBackend::ensureComm(int device) {
  std::lock_guard<std::mutex> lock(commMutex_);
  if (comm_) {
    if (comm_->device() != device) {
      throw ValueError(fmt::format(
          "nccl: group '{}' uses cuda:{} but a tensor is on cuda:{}; a process group's NCCL "
          "communicator serves one device (move the tensor or bind another group)",
          ctx_.groupName, comm_->device(), device));
    }
    return *comm_;
  }
  try {
    comm_ = NcclComm::create(*ctx_.store, ctx_.storePrefix + "nccl/unique_id", ctx_.rank,
                             ctx_.size, device, ctx_.timeout, ctx_.groupName);
  } catch (const std::exception&) {
    markFailed(failureReasonOf(std::current_exception()));
    throw;
  }
  DL_LOG(INFO, "nccl: group '{}' rank {} of {} on cuda:{} (NCCL {})", ctx_.groupName, ctx_.rank,
         ctx_.size, device, ncclVersionString());
  return *comm_;
}

int NcclBackend::deviceOf(const std::vector<Tensor>& tensors, const WorkInfo& wi) const {
  std::optional<int> device;
  for (const auto& t : tensors) {
    if (!t.defined()) continue;
    if (!t.device().isCuda()) {
      throw ValueError(fmt::format(
          "{}: the nccl backend takes CUDA tensors only, got a tensor on {} (No backend type "
          "associated with device type {})", wi.describe(), t.device().str(),
          deviceTypeName(t.device().type)));
    }
    if (device && *device != t.device().index) {
      throw ValueError(fmt::format("{}: tensors on cuda:{} and cuda:{}; one operation takes "
                                   "tensors on one device", wi.describe(), *device,
                                   t.device().index));
    }
    device = t.device().index;
  }
  if (device) return *device;
  if (deviceId_) return *deviceId_;
  if (auto d = this->device()) return *d;
  // No tensor (barrier before anything else): PyTorch's guess, rank % devices.
  const int count = cuda::deviceCount();
  if (count == 0) throw DistBackendError("nccl: " + cuda::unavailableReason());
  return ctx_.rank % count;
}

WorkInfo NcclBackend::info(OpType type, uint64_t seq, const std::vector<Tensor>& in,
                           const std::vector<Tensor>& out, Milliseconds timeout, int peer,
                           int tag, std::string_view redop) const {
  return makeWorkInfo(ctx_.groupName, ctx_.rank, type, seq, in, out, timeout, peer, tag,
                      redop);
}

WorkPtr NcclBackend::failedWork(WorkInfo wi, const FailureReason& why) const {
  auto work = std::make_shared<Work>(std::move(wi), std::vector<Tensor>{});
  WorkCompletion::finish(*work, refusedWorkError(work->info().describe(), ctx_.groupName, why));
  return work;
}

WorkPtr NcclBackend::launch(Launch op, const Body& body) {
  if (auto why = errorReason()) return failedWork(std::move(op.info), *why);
  const int device = deviceOf(op.tensors, op.info);
  NcclComm& comm = ensureComm(device);
  cuda::setDevice(device);
  // The inputs are ready on the caller's stream: the communication stream waits.
  cuda::Event ready;
  ready.record(cuda::currentStream(device));
  ready.block(comm.stream());
  cuda::Event end;
  try {
    cuda::StreamGuard guard(comm.stream());  // scratch tensors belong to the comm stream
    body(NcclCall{comm, Deadline::after(op.info.timeout), op.tensors});
    end.record(comm.stream());
  } catch (const ValueError&) {
    throw;  // bad input found by NCCL's argument checks: the group stays usable
  } catch (const std::exception&) {
    abortWith(failureReasonOf(std::current_exception()));
    throw;
  }
  std::weak_ptr<NcclBackend> self =
      std::static_pointer_cast<NcclBackend>(shared_from_this());
  auto work = std::make_shared<NcclWork>(
      std::move(op.info), std::move(op.outputs), end, device, op.hostWait || blockingWait_,
      [self](const std::string& why) {
        if (auto b = self.lock()) {
          b->abortWith({FailureReason::kTimeout, "blocking wait timed out: " + why});
        }
      });
  WorkCompletion::markStarted(*work);
  completion_->add(work, std::move(op.tensors));
  return work;
}

std::optional<FailureReason> NcclBackend::errorReason() const {
  std::lock_guard<std::mutex> lock(errorMutex_);
  return error_;
}

void NcclBackend::markFailed(const FailureReason& reason) {
  std::lock_guard<std::mutex> lock(errorMutex_);
  if (!error_) {
    error_ = reason;
    DL_LOG(WARNING, "nccl: group '{}' rank {} failed: {}", ctx_.groupName, ctx_.rank,
           reason.text);
  }
}

// Any thread: flags the backend, aborts the communicator (ncclCommAbort),
// fails what is pending.
void NcclBackend::abortWith(const FailureReason& reason) {
  markFailed(reason);
  NcclCommPtr comm;
  {
    std::lock_guard<std::mutex> lock(commMutex_);
    comm = comm_;
  }
  if (comm) comm->abort();
  if (completion_) completion_->failAll(reason.text);
}

void NcclBackend::abort(const std::string& reason) { abortWith(FailureReason::aborted(reason)); }

void NcclBackend::shutdown(Milliseconds timeout) {
  if (stopped_.exchange(true)) return;
  const Deadline deadline = Deadline::after(timeout);
  const bool drained = completion_->drain(timeout);
  {
    std::lock_guard<std::mutex> lock(errorMutex_);
    if (!error_) error_ = FailureReason::shutDown();
  }
  if (!drained) completion_->failAll("the backend was shut down before the operation finished");
  completion_->stop();
  NcclCommPtr comm;
  {
    std::lock_guard<std::mutex> lock(commMutex_);
    comm = std::move(comm_);
  }
  if (comm && drained) comm->destroy(deadline.remaining());
  if (comm && !drained) comm->abort();
}

}  // namespace nccl_backend

void registerNcclBackend() {
  BackendInfo info{"nccl",
                   [](const BackendContext& ctx) -> BackendPtr {
                     return std::make_shared<nccl_backend::NcclBackend>(ctx);
                   },
                   {"cuda"}};
  info.options = {{"nccl.blocking_wait", "1/0: wait() blocks the host (TORCH_NCCL_BLOCKING_WAIT)",
                   [](const std::string& v) { parseOptionFlag("nccl.blocking_wait", v); }},
                  {"nccl.device_id", "the rank's CUDA device (\"cuda:N\" or N)",
                   [](const std::string& v) {
                     nccl_backend::resolveDeviceId({{"nccl.device_id", v}});
                   }}};
  registerBackend(std::move(info));
}

}  // namespace distlab::comm
