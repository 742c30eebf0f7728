// GlooBackend: rendezvous, the task wrapper, error translation, lifecycle,
// registration. The operations are in gloo_backend_ops.cpp.
#include "runtime/comm/backends/gloo/gloo_backend.hpp"

#include <fmt/format.h>
#include <signal.h>

#include <utility>

#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>

#include "runtime/comm/backend_registry.hpp"
#include "runtime/comm/backends/gloo/gloo_device.hpp"
#include "runtime/comm/backends/gloo/gloo_p2p.hpp"
#include "runtime/comm/backends/gloo/gloo_store_adapter.hpp"
#include "runtime/comm/work_completion.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/logging.hpp"

namespace distlab::comm {

void registerGlooBackend() {
  BackendInfo info = hostBackendInfo("gloo", [](const BackendContext& ctx) -> BackendPtr {
    return std::make_shared<gloo_backend::GlooBackend>(ctx);
  });
  info.options = {
      {"gloo.socket_ifname", "network interfaces, comma list (GLOO_SOCKET_IFNAME)",
       [](const std::string& value) {
         gloo_backend::parseIfnameList(value, "backend option gloo.socket_ifname");
       }},
      {"gloo.hostname", "the address to bind when no interface is named",
       [](const std::string& value) {
         if (value.empty() || value.find_first_of(" \t\n") != std::string::npos) {
           throw ValueError("backend option gloo.hostname='" + value +
                            "': give a host name or address");
         }
       }}};
  registerBackend(std::move(info));
}

namespace gloo_backend {
namespace {


std::exception_ptr peerError(const WorkInfo& info, const PeerVerdict& v) {
  std::string msg = fmt::format("{}: rank {}: {}", info.describe(), info.rank, v.text);
  if (v.state == PeerState::kDied) return std::make_exception_ptr(DistPeerFailureError(msg));
  if (v.timedOut) return std::make_exception_ptr(DistTimeoutError(msg));
  return std::make_exception_ptr(DistNetworkError(msg));
}

// Gloo writes with writev(2), which raises SIGPIPE on a connection the peer
// reset; the default action would kill this process instead of failing the
// operation. PyTorch runs under Python, which ignores SIGPIPE; do the same
// unless the program installed its own handler.
void ignoreSigpipe() {
  struct sigaction current {};
  if (::sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
    ::signal(SIGPIPE, SIG_IGN);
  }
}

}  // namespace

GlooBackend::GlooBackend(const BackendContext& context)
    : Backend(context.rank, context.size), ctx_(context) {
  ignoreSigpipe();
  for (auto& dev : createDevices(resolveDeviceSpec(ctx_.options, ctx_.env.glooSocketIfnames)))
    devices_.push_back(trackBuffers(std::move(dev), buffers_));
  checkInterfaceCount();
  connect();
  PeerMonitor::Config mc;
  mc.store = ctx_.store;
  mc.recordPrefix = ctx_.storePrefix + "gloo/down/";
  mc.rank = ctx_.rank;
  mc.globalRanks = ctx_.globalRanks;
  mc.groupName = ctx_.groupName;
  mc.buffers = buffers_;
  monitor_ = std::make_unique<PeerMonitor>(mc);
  monitor_->watch(contexts_);
  monitor_->start();
  progress_ = std::make_shared<ProgressThread>("gloo:" + ctx_.groupName);
  p2p_ = std::make_unique<GlooP2P>(*this, contexts_[0], *monitor_);
}

GlooBackend::~GlooBackend() {
  try {
    shutdown(Milliseconds(2000));
  } catch (...) {
  }
}

// Every rank must use the same number of interfaces (GLOO_SOCKET_IFNAME's rule):
// checked before connecting, since a mismatch would otherwise hang until timeout.
void GlooBackend::checkInterfaceCount() {
  const std::string prefix = ctx_.storePrefix + "gloo/ifcount/";
  ctx_.store->setString(prefix + std::to_string(ctx_.rank), std::to_string(devices_.size()));
  std::vector<std::string> keys;
  for (int q = 0; q < ctx_.size; ++q) keys.push_back(prefix + std::to_string(q));
  ctx_.store->wait(keys, ctx_.timeout);
  auto values = ctx_.store->multiGet(keys);
  for (int q = 0; q < ctx_.size; ++q) {
    std::string v(values[q].begin(), values[q].end());
    if (v != std::to_string(devices_.size())) {
      throw ValueError(fmt::format(
          "gloo: group '{}': rank {} uses {} network interface(s) but rank {} uses {}; every "
          "rank must name the same number of interfaces in GLOO_SOCKET_IFNAME",
          ctx_.groupName, ctx_.rank, devices_.size(), q, v));
    }
  }
}

void GlooBackend::connect() {
  for (size_t i = 0; i < devices_.size(); ++i) {
    auto gctx = std::make_shared<::gloo::rendezvous::Context>(ctx_.rank, ctx_.size);
    gctx->setTimeout(ctx_.timeout);
    GlooStoreAdapter adapter(ctx_.store, fmt::format("{}gloo/{}/", ctx_.storePrefix, i),
                             ctx_.timeout);
    try {
      gctx->connectFullMesh(adapter, devices_[i]);
    } catch (const DistError&) {
      throw;
    } catch (const std::exception& e) {
      throw DistNetworkError(fmt::format(
          "gloo: rank {} of group '{}' could not connect to its peers over {}: {}", ctx_.rank,
          ctx_.groupName, devices_[i]->str(), e.what()));
    }
    contexts_.push_back(gctx);
  }
}

std::optional<FailureReason> GlooBackend::errorReason() const {
  std::lock_guard<std::mutex> lock(errorMutex_);
  return error_;
}

std::exception_ptr GlooBackend::translate(std::exception_ptr error, const WorkInfo& info,
                                          Clock::time_point started) const {
  try {
    std::rethrow_exception(error);
  } catch (const Error&) {
    return error;  // already a distlab error (bad input found late, ...)
  } catch (const std::exception& e) {
    if (auto v = monitor_->verdict()) return peerError(info, *v);
    if (auto why = errorReason()) {
      // This rank broke the connections itself after an earlier failure.
      return std::make_exception_ptr(DistBackendError(fmt::format(
          "{}: group '{}' failed earlier: {}", info.describe(), ctx_.groupName, why->text)));
    }
    const std::string what = e.what();
    const auto elapsed = std::chrono::duration_cast<Milliseconds>(Clock::now() - started);
    if (what.find("Timed out") != std::string::npos || elapsed >= info.timeout) {
      return std::make_exception_ptr(DistTimeoutError(fmt::format(
          "{}: rank {}: timed out after {} ms (timeout {} ms) (gloo: {})", info.describe(),
          info.rank, elapsed.count(), info.timeout.count(), what)));
    }
    if (auto v = monitor_->judgeBroken(Milliseconds(300))) return peerError(info, *v);
    return std::make_exception_ptr(DistNetworkError(
        fmt::format("{}: rank {}: gloo failed: {}", info.describe(), info.rank, what)));
  }
}

void GlooBackend::markFailed(const FailureReason& reason) {
  {
    std::lock_guard<std::mutex> lock(errorMutex_);
    if (error_) return;
    error_ = reason;
  }
  DL_LOG(WARNING, "gloo: group '{}' rank {} failed: {}", ctx_.groupName, ctx_.rank, reason.text);
  // Record first, then close: peers that see the close find the reason
  // (Note [Gloo peer failure]).
  monitor_->publish(
      failedRecord(reason.kind, fmt::format("rank {}: {}", ctx_.rank, reason.text)));
  monitor_->interrupt();
}

WorkInfo GlooBackend::info(OpType type, uint64_t seq, const std::vector<Tensor>& in,
                           const std::vector<Tensor>& out, Milliseconds timeout, int peer,
                           int tag, std::string_view redop) const {
  return makeWorkInfo(ctx_.groupName, ctx_.rank, type, seq, in, out, timeout, peer, tag,
                      redop);
}

WorkPtr GlooBackend::submit(WorkInfo workInfo, std::vector<Tensor> outputs, bool asyncOp,
                            Body body) {
  auto work = std::make_shared<Work>(std::move(workInfo), std::move(outputs));
  if (stopped_.load()) {
    WorkCompletion::finish(*work, refusedWorkError(work->info().describe(), ctx_.groupName,
                                  errorReason().value_or(FailureReason::shutDown())));
    return work;
  }
  auto task = [this, work, body = std::move(body)]() {
    const WorkInfo& wi = work->info();
    if (auto why = errorReason()) {
      WorkCompletion::finish(*work, refusedWorkError(wi.describe(), ctx_.groupName, *why));
      return;
    }
    // Note [Work failure and the caller's tensors]: a failure from outside
    // (the watchdog, Work::abort) interrupts the Gloo algorithm and is
    // published by endExecution(), after the algorithm let go of the tensors.
    if (!WorkCompletion::beginExecution(*work, [this](std::exception_ptr why) { cancel(std::move(why)); })) {
      return;  // failed while queued: never touch its tensors
    }
    const auto started = Clock::now();
    GlooCall call{contexts_[wi.seq % contexts_.size()], static_cast<uint32_t>(wi.seq),
                  Deadline::after(wi.timeout), &scratch_};
    monitor_->opBegin();
    std::exception_ptr error;
    try {
      body(call);
      // An interrupted Gloo algorithm may return normally with partial data.
      if (monitor_->interrupted()) throw std::runtime_error("interrupted");
    } catch (...) {
      error = translate(std::current_exception(), wi, started);
    }
    monitor_->opEnd();
    if (std::exception_ptr cancelled = takeCancelError()) error = cancelled;
    if (error) markFailed(failureReasonOf(error));
    WorkCompletion::endExecution(*work, error);
  };
  const uint64_t ticket = progress_->runOrEnqueue(std::move(task), !asyncOp);
  if (ticket != 0) WorkCompletion::setInlineRunner(*work, progress_, ticket);  // Note [Waiting helps]
  return work;
}

void GlooBackend::cancel(std::exception_ptr why) {
  {
    std::lock_guard<std::mutex> lock(cancelMutex_);
    cancelError_ = std::move(why);
  }
  monitor_->interrupt();
}

std::exception_ptr GlooBackend::takeCancelError() {
  std::lock_guard<std::mutex> lock(cancelMutex_);
  return std::exchange(cancelError_, nullptr);
}

void GlooBackend::abort(const std::string& reason) { abortWith(FailureReason::aborted(reason)); }

// Note [A peer's timeout is a timeout]: the failure record's kind is
// "timeout", so peers raise DistTimeoutError (peerError).
void GlooBackend::abortAfterTimeout(const std::string& reason) {
  abortWith(FailureReason::timedOut(reason));
}

// The record alone: peers read it when a connection breaks (or they judge a
// broken pair); the running operation is left to the watchdog.
void GlooBackend::announceTimeout(const std::string& reason) {
  monitor_->publish(failedRecord(
      FailureReason::kTimeout,
      fmt::format("rank {}: {}", ctx_.rank, FailureReason::timedOut(reason).text)));
}

void GlooBackend::abortWith(const FailureReason& why) {
  markFailed(why);
  if (progress_) progress_->dropQueued([](ProgressThread::Task& task) { task(); });
  if (p2p_) p2p_->stop(why.text);
}

void GlooBackend::shutdown(Milliseconds timeout) {
  if (stopped_.exchange(true)) return;
  if (!progress_) return;
  const Deadline deadline = Deadline::after(timeout);
  progress_->drain(timeout);
  if (!errorReason()) p2p_->flushSends(deadline);
  {
    std::lock_guard<std::mutex> lock(errorMutex_);
    if (!error_) error_ = FailureReason::shutDown();
  }
  monitor_->publish(shutdownRecord(fmt::format("rank {} finished", ctx_.rank)));
  progress_->dropQueued([](ProgressThread::Task& task) { task(); });
  progress_->stop();
  p2p_->stop("the backend was shut down");
  monitor_->stop();
  monitor_.reset();
  contexts_.clear();  // closes the connections (abandoned p2p buffers keep theirs)
  p2p_.reset();
  devices_.clear();
}

}  // namespace gloo_backend
}  // namespace distlab::comm
