// Module::stateDict / loadStateDict (PyTorch: state_dict, load_state_dict).
#include <algorithm>
#include <sstream>

#include "runtime/autograd/grad_mode.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/nn/module.hpp"

namespace distlab::nn {
namespace {

std::string quotedList(const std::vector<std::string>& keys) {
  std::string out;
  for (size_t i = 0; i < keys.size(); ++i) out += (i ? ", \"" : "\"") + keys[i] + "\"";
  return out;
}

}  // namespace

void Module::collectState(const std::string& prefix, StateDict& out) const {
  for (const auto& [name, t] : params_) out.insert(prefix + name, t.detach());
  for (const auto& [name, t] : buffers_) {
    const bool persistent =
        std::find(nonPersistent_.begin(), nonPersistent_.end(), name) == nonPersistent_.end();
    if (t.defined() && persistent) out.insert(prefix + name, t.detach());
  }
  for (const auto& [name, c] : children_) c->collectState(prefix + name + ".", out);
}

StateDict Module::stateDict() const {
  StateDict out;
  collectState("", out);
  return out;
}

LoadStateDictResult Module::loadStateDict(const StateDict& state, bool strict) {
  StateDict own = stateDict();
  LoadStateDictResult result;
  std::vector<std::string> errors;
  autograd::NoGradGuard noGrad;
  for (const auto& [key, target] : own) {
    const Tensor* source = state.find(key);
    if (source == nullptr) {
      result.missingKeys.push_back(key);
      continue;
    }
    if (source->sizes() != target.sizes()) {
      errors.push_back("size mismatch for " + key + ": copying a param with shape " +
                       shapeToString(source->sizes()) +
                       " from checkpoint, the shape in current model is " +
                       shapeToString(target.sizes()) + ".");
      continue;
    }
    Tensor dst = target;
    dst.copy_(*source);
  }
  for (const auto& [key, t] : state) {
    if (!own.contains(key)) result.unexpectedKeys.push_back(key);
  }
  if (strict) {
    if (!result.unexpectedKeys.empty()) {
      errors.insert(errors.begin(),
                    "Unexpected key(s) in state_dict: " + quotedList(result.unexpectedKeys) + ". ");
    }
    if (!result.missingKeys.empty()) {
      errors.insert(errors.begin(),
                    "Missing key(s) in state_dict: " + quotedList(result.missingKeys) + ". ");
    }
  }
  if (!errors.empty()) {
    std::ostringstream msg;
    msg << "Error(s) in loading state_dict for " << typeName() << ":";
    for (const auto& e : errors) msg << "\n\t" << e;
    throw Error(msg.str());
  }
  return result;
}

}  // namespace distlab::nn
