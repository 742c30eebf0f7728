#include "runtime/optim/optimizer.hpp"

#include <unordered_set>

#include "runtime/core/check.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::optim {

Optimizer::Optimizer(std::string name, Options defaults, std::vector<ParamGroup> groups)
    : name_(std::move(name)), defaults_(std::move(defaults)) {
  DL_CHECK_T(ValueError, !groups.empty(), name_, " got an empty parameter list");
  for (auto& g : groups) addParamGroup(std::move(g));
}

void Optimizer::addParamGroup(ParamGroup group) {
  DL_CHECK_T(ValueError, !group.params.empty(), name_, " got an empty parameter list");
  std::unordered_set<const TensorImpl*> seen;
  for (const auto& g : groups_) {
    for (const auto& p : g.params) seen.insert(p.impl());
  }
  std::unordered_set<const TensorImpl*> own;
  for (const Tensor& p : group.params) {
    DL_CHECK_T(ValueError, p.defined() && p.isLeaf(), name_,
               " can't optimize a non-leaf or undefined Tensor");
    DL_CHECK_T(ValueError, !seen.count(p.impl()),
               "some parameters appear in more than one parameter group");
    DL_CHECK_T(ValueError, own.insert(p.impl()).second, name_,
               ": a parameter group contains the same parameter twice");
  }
  for (const auto& [key, value] : group.options) {
    DL_CHECK_T(ValueError, defaults_.count(key), name_, ": unknown option \"", key,
               "\" in a parameter group");
  }
  for (const auto& [key, value] : defaults_) group.options.emplace(key, value);
  groups_.push_back(std::move(group));
}

double Optimizer::option(const ParamGroup& group, const std::string& key) {
  auto it = group.options.find(key);
  DL_CHECK(it != group.options.end(), "parameter group lacks option \"", key, "\"");
  return it->second;
}

void Optimizer::zeroGrad(bool setToNone) {
  for (auto& g : groups_) {
    for (Tensor& p : g.params) {
      if (!p.grad().defined()) continue;
      if (setToNone) {
        p.setGrad(Tensor());
      } else {
        p.mutableGrad().zero_();
      }
    }
  }
}

ParamState& Optimizer::state(const Tensor& param) { return state_[param.impl()]; }

const ParamState* Optimizer::findState(const Tensor& param) const {
  auto it = state_.find(param.impl());
  return it == state_.end() ? nullptr : &it->second;
}

void Optimizer::replaceParameter(const Tensor& old, const Tensor& replacement) {
  Tensor* slot = nullptr;
  for (auto& group : groups_) {
    for (auto& p : group.params) {
      DL_CHECK_T(ValueError, !p.isSame(replacement),
                 name_, ".replaceParameter: the replacement is already a parameter");
      if (p.isSame(old)) slot = &p;
    }
  }
  DL_CHECK_T(ValueError, slot != nullptr,
             name_, ".replaceParameter: the tensor to replace is not a parameter of this optimizer");
  DL_CHECK_T(ValueError, old.sizes() == replacement.sizes() && old.dtype() == replacement.dtype(),
             name_, ".replaceParameter: the replacement has shape ", shapeToString(replacement.sizes()),
             " and dtype ", dtypeName(replacement.dtype()), " but the parameter has ",
             shapeToString(old.sizes()), " and ", dtypeName(old.dtype()));
  *slot = replacement;
  auto node = state_.extract(old.impl());
  if (!node.empty()) {
    node.key() = replacement.impl();
    state_.insert(std::move(node));
  }
}

OptimizerStateDict Optimizer::stateDict() const {
  OptimizerStateDict out;
  int64_t index = 0;
  for (const auto& g : groups_) {
    OptimizerStateDict::Group group{g.options, {}};
    for (const Tensor& p : g.params) {
      if (const ParamState* s = findState(p)) {
        ParamState copy{s->step, {}};
        for (const auto& [k, v] : s->buffers) copy.buffers.emplace(k, v.clone());
        out.state.emplace(index, std::move(copy));
      }
      group.params.push_back(index++);
    }
    out.paramGroups.push_back(std::move(group));
  }
  return out;
}

void Optimizer::loadStateDict(const OptimizerStateDict& sd) {
  DL_CHECK_T(ValueError, sd.paramGroups.size() == groups_.size(),
             "loaded state dict has a different number of parameter groups (",
             sd.paramGroups.size(), " vs ", groups_.size(), ")");
  for (size_t i = 0; i < groups_.size(); ++i) {
    DL_CHECK_T(ValueError, sd.paramGroups[i].params.size() == groups_[i].params.size(),
               "loaded state dict contains a parameter group that doesn't match the size of "
               "optimizer's group (group ",
               i, ": ", sd.paramGroups[i].params.size(), " vs ", groups_[i].params.size(), ")");
  }
  state_.clear();
  for (size_t i = 0; i < groups_.size(); ++i) {
    for (const auto& [key, value] : sd.paramGroups[i].options) groups_[i].options[key] = value;
    for (size_t j = 0; j < groups_[i].params.size(); ++j) {
      const Tensor& p = groups_[i].params[j];
      auto it = sd.state.find(sd.paramGroups[i].params[j]);
      if (it == sd.state.end()) continue;
      ParamState copy{it->second.step, {}};
      for (const auto& [k, v] : it->second.buffers) {
        DL_CHECK_T(ValueError, v.sizes() == p.sizes() || v.numel() == 1, "optimizer state \"", k,
                   "\" has shape ", shapeToString(v.sizes()), " but the parameter has shape ",
                   shapeToString(p.sizes()));
        copy.buffers.emplace(k, v.to(p.dtype()).clone());
      }
      state_[p.impl()] = std::move(copy);
    }
  }
}

}  // namespace distlab::optim
