#pragma once
// Building an optimizer of any kind by name (PyTorch passes `optimizer_class`
// and **defaults; ZeroRedundancyOptimizer builds its local optimizer this way).
//
//   auto factory = optim::optimizerFactory("adamw");
//   auto opt = factory({ParamGroup{params, {}}}, {{"lr", 1e-3}});
//
// `defaults` use the option names of optimizer.hpp ("lr", "momentum",
// "beta1", ...); each group's own options win over them. An unknown kind or
// an option the kind does not have is a ValueError naming it and the valid
// names.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/optim/optimizer.hpp"

namespace distlab::optim {

using OptimizerFactory =
    std::function<std::unique_ptr<Optimizer>(std::vector<ParamGroup> groups, const Options& defaults)>;

// "sgd", "adam" or "adamw".
OptimizerFactory optimizerFactory(const std::string& kind);

}  // namespace distlab::optim
