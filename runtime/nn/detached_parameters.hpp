#pragma once
// Runs a forward with some parameters left out of the autograd graph.
//
// While a DetachedParameters lives, each named parameter of `root` (fully
// qualified, "layers.0.weight") is replaced in its module by a detached handle
// on the same storage: the forward computes the same values, but no gradient
// reaches the parameter, exactly as for a parameter the forward never used.
// The destructor puts the original tensors back. Used by DDP for the
// unused_param fault of a user's program (Note [Training observer]).
// Throws ValueError naming an unknown parameter and listing the known ones.
#include <string>
#include <utility>
#include <vector>

#include "runtime/nn/module.hpp"

namespace distlab::nn {

class DetachedParameters {
 public:
  DetachedParameters(Module& root, const std::vector<std::string>& names);
  ~DetachedParameters();
  DetachedParameters(const DetachedParameters&) = delete;
  DetachedParameters& operator=(const DetachedParameters&) = delete;

 private:
  struct Swapped {
    Module* owner;
    std::string localName;
    Tensor original;
  };
  std::vector<Swapped> swapped_;
};

}  // namespace distlab::nn
