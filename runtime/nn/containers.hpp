#pragma once
// Sequential and ModuleList (PyTorch: nn.Sequential, nn.ModuleList). Children
// are named "0", "1", ... so parameters read "0.weight", "layers.2.bias".
#include <memory>
#include <vector>

#include "runtime/nn/module.hpp"

namespace distlab::nn {

// Feeds each child's outputs to the next child (through call(), so hooks run).
class Sequential : public Module {
 public:
  Sequential() : Module("Sequential") {}
  explicit Sequential(const std::vector<std::shared_ptr<Module>>& modules);
  void push_back(std::shared_ptr<Module> module);
  size_t size() const { return modules_.size(); }
  const std::shared_ptr<Module>& operator[](size_t i) const { return modules_.at(i); }
  TensorList forwardAll(const TensorList& inputs) override;

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};

// Holds submodules; has no forward of its own (forwardAll throws).
class ModuleList : public Module {
 public:
  ModuleList() : Module("ModuleList") {}
  void push_back(std::shared_ptr<Module> module);
  size_t size() const { return modules_.size(); }
  const std::shared_ptr<Module>& operator[](size_t i) const { return modules_.at(i); }
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }
  TensorList forwardAll(const TensorList& inputs) override;

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};

}  // namespace distlab::nn
