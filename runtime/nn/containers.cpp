#include "runtime/nn/containers.hpp"

#include <string>

#include "runtime/core/errors.hpp"

namespace distlab::nn {

Sequential::Sequential(const std::vector<std::shared_ptr<Module>>& modules) : Sequential() {
  for (const auto& m : modules) push_back(m);
}

void Sequential::push_back(std::shared_ptr<Module> module) {
  registerModule(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
}

TensorList Sequential::forwardAll(const TensorList& inputs) {
  TensorList x = inputs;
  for (const auto& m : modules_) x = m->call(x);
  return x;
}

void ModuleList::push_back(std::shared_ptr<Module> module) {
  registerModule(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
}

TensorList ModuleList::forwardAll(const TensorList&) {
  throw Error("ModuleList has no forward(); call its modules");
}

}  // namespace distlab::nn
