#include "runtime/autograd/training_observer.hpp"

#include <memory>
#include <mutex>

namespace distlab {
namespace {

std::mutex& observerMutex() {
  static std::mutex m;
  return m;
}

std::shared_ptr<const TrainingObserver>& observerSlot() {
  static std::shared_ptr<const TrainingObserver> slot;
  return slot;
}

// A snapshot: the observer runs outside the lock (it may block).
std::shared_ptr<const TrainingObserver> currentObserver() {
  std::lock_guard<std::mutex> lock(observerMutex());
  return observerSlot();
}

}  // namespace

void setTrainingObserver(TrainingObserver observer) {
  auto next = std::make_shared<const TrainingObserver>(std::move(observer));
  std::lock_guard<std::mutex> lock(observerMutex());
  observerSlot() = std::move(next);
}

void notifyTrainingStepBegins() {
  auto observer = currentObserver();
  if (observer && observer->stepBegins) observer->stepBegins();
}

void notifyGradientsReady(const std::vector<Tensor>& params) {
  auto observer = currentObserver();
  if (observer && observer->gradientsReady) observer->gradientsReady(params);
}

bool observerSkipsBackward() {
  auto observer = currentObserver();
  return observer && observer->skipBackward && observer->skipBackward();
}

std::vector<std::string> observerParametersLeftUnused(
    const std::function<std::vector<std::string>()>& parameterNames) {
  auto observer = currentObserver();
  if (!observer || !observer->parametersLeftUnused) return {};
  return observer->parametersLeftUnused(parameterNames);
}

}  // namespace distlab
