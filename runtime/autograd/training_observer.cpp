#include "runtime/core/training_step.hpp"

#include <memory>
#include <mutex>

namespace distlab {
namespace {

std::mutex& observerMutex() {
  static std::mutex m;
  return m;
}

std::shared_ptr<const std::function<void()>>& observerSlot() {
  static std::shared_ptr<const std::function<void()>> slot;
  return slot;
}

}  // namespace

void setTrainingStepObserver(std::function<void()> observer) {
  std::lock_guard<std::mutex> lock(observerMutex());
  observerSlot() =
      observer ? std::make_shared<const std::function<void()>>(std::move(observer)) : nullptr;
}

void notifyTrainingStepBegins() {
  std::shared_ptr<const std::function<void()>> observer;
  {
    std::lock_guard<std::mutex> lock(observerMutex());
    observer = observerSlot();
  }
  if (observer) (*observer)();  // outside the lock: it may block
}

}  // namespace distlab
