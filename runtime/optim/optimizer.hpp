#pragma once
// Optimizer base (PyTorch: torch.optim.Optimizer): parameter groups with
// per-group hyper-parameters, per-parameter state, state_dict round trips.
//
// Hyper-parameters live in each group's `options` map under PyTorch's names
// ("lr", "momentum", "weight_decay", "betas" as "beta1"/"beta2", booleans as
// 0/1), so schedulers and ZeroRedundancyOptimizer can read and change them
// generically; every group holds a complete set (missing keys are filled from
// the optimizer's defaults when the group is added).
// step() runs with grad mode off, updates parameters in place, and skips
// parameters whose .grad is undefined. Not thread-safe.
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/tensor/tensor.hpp"

namespace distlab::optim {

using Options = std::map<std::string, double>;

struct ParamGroup {
  std::vector<Tensor> params;
  Options options;  // overrides; completed from the defaults by the optimizer
};

// Per-parameter state: the step count and named buffers ("momentum_buffer",
// "exp_avg", "exp_avg_sq", "max_exp_avg_sq").
struct ParamState {
  int64_t step = 0;
  std::map<std::string, Tensor> buffers;
};

// PyTorch's optimizer state_dict: state keyed by the parameter's position in
// the concatenation of all groups' params; groups with options and indices.
struct OptimizerStateDict {
  struct Group {
    Options options;
    std::vector<int64_t> params;
  };
  std::map<int64_t, ParamState> state;
  std::vector<Group> paramGroups;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  virtual void step() = 0;
  const std::string& name() const { return name_; }

  // PyTorch zero_grad(set_to_none=True).
  void zeroGrad(bool setToNone = true);
  // Adds a group; ValueError if it is empty or shares a parameter with another
  // group ("some parameters appear in more than one parameter group").
  void addParamGroup(ParamGroup group);
  std::vector<ParamGroup>& paramGroups() { return groups_; }
  const std::vector<ParamGroup>& paramGroups() const { return groups_; }
  const Options& defaults() const { return defaults_; }

  // The state of `param` (created empty on first use) / null when absent.
  ParamState& state(const Tensor& param);
  const ParamState* findState(const Tensor& param) const;

  // Puts `replacement` in `old`'s place in its group and moves `old`'s state to
  // it (state is keyed by the tensor, so without this it would stay with the old
  // one). For engines that swap a parameter's tensor after the optimizer was
  // built. ValueError when `old` is not a parameter here, `replacement` already
  // is, or the two differ in shape or dtype (the state buffers would not fit).
  void replaceParameter(const Tensor& old, const Tensor& replacement);

  // Buffers are deep-copied in both directions.
  OptimizerStateDict stateDict() const;
  // ValueError when the group count or a group's size differs.
  void loadStateDict(const OptimizerStateDict& stateDict);

 protected:
  Optimizer(std::string name, Options defaults, std::vector<ParamGroup> groups);
  // Reads a group option that must exist (all groups are completed).
  static double option(const ParamGroup& group, const std::string& key);

 private:
  std::string name_;
  Options defaults_;
  std::vector<ParamGroup> groups_;
  std::unordered_map<const TensorImpl*, ParamState> state_;
};

}  // namespace distlab::optim
