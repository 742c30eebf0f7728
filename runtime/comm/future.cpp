#include "runtime/comm/future.hpp"

#include <string>

#include "runtime/core/errors.hpp"

namespace distlab::comm {

std::shared_ptr<Future> Future::completed(Value value) {
  auto f = std::make_shared<Future>();
  f->markCompleted(std::move(value));
  return f;
}

std::shared_ptr<Future> Future::failed(std::exception_ptr error) {
  auto f = std::make_shared<Future>();
  f->setError(std::move(error));
  return f;
}

void Future::markCompleted(Value value) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (completed_) throw Error("Future::markCompleted: the future is already completed");
    value_ = std::move(value);
    completed_ = true;
  }
  cv_.notify_all();
  runCallbacks();
}

void Future::setError(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (completed_) throw Error("Future::setError: the future is already completed");
    error_ = std::move(error);
    completed_ = true;
  }
  cv_.notify_all();
  runCallbacks();
}

bool Future::isCompleted() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return completed_;
}

bool Future::hasError() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_ != nullptr;
}

std::exception_ptr Future::exception() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

void Future::wait(std::chrono::milliseconds timeout) {
  WaitHelp help;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (completed_) return;
    help = waitHelp_;
  }
  if (help) help(timeout);  // Note [Waiting on a Work's future helps]
  std::unique_lock<std::mutex> lock(mutex_);
  if (!cv_.wait_for(lock, timeout, [&] { return completed_; })) {
    throw DistTimeoutError("Future::wait: not completed within " +
                           std::to_string(timeout.count()) + " ms");
  }
}

Future::Value Future::value(std::chrono::milliseconds timeout) {
  wait(timeout);
  std::lock_guard<std::mutex> lock(mutex_);
  if (error_) std::rethrow_exception(error_);
  return value_;
}

const Future::Value& Future::constValue() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!completed_) throw Error("Future::constValue: the future is not completed");
  if (error_) std::rethrow_exception(error_);
  return value_;
}

void Future::setWaitHelp(WaitHelp help) {
  std::lock_guard<std::mutex> lock(mutex_);
  waitHelp_ = std::move(help);
}

std::shared_ptr<Future> Future::then(Callback callback) {
  auto child = std::make_shared<Future>();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    child->waitHelp_ = waitHelp_;  // the child is not shared yet
  }
  addCallback([child, cb = std::move(callback)](Future& parent) {
    try {
      child->markCompleted(cb(parent));
    } catch (...) {
      child->setError(std::current_exception());
    }
  });
  return child;
}

void Future::addCallback(std::function<void(Future&)> fn) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!completed_) {
      callbacks_.push_back(std::move(fn));
      return;
    }
  }
  fn(*this);
}

void Future::runCallbacks() {
  std::vector<std::function<void(Future&)>> callbacks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    callbacks.swap(callbacks_);
  }
  for (auto& cb : callbacks) cb(*this);
}

}  // namespace distlab::comm
