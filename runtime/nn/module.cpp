#include "runtime/nn/module.hpp"

#include <algorithm>
#include <map>
#include <unordered_set>

#include "runtime/autograd/grad_mode.hpp"
#include "runtime/core/check.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::nn {

struct Module::Hooks {
  // Ordered maps keyed by a position; prepend uses negative keys.
  std::map<int64_t, ForwardPreHook> pre;
  std::map<int64_t, ForwardHook> post;
  int64_t nextBack = 0;
  int64_t nextFront = -1;
};

namespace {

template <typename Map, typename Hook>
HookHandle addHook(const std::shared_ptr<Module::Hooks>& hooks,
                   Map Module::Hooks::*field,
                   Hook hook,
                   bool prepend) {
  const int64_t key = prepend ? hooks->nextFront-- : hooks->nextBack++;
  ((*hooks).*field).emplace(key, std::move(hook));
  std::weak_ptr<Module::Hooks> weak = hooks;
  return HookHandle([weak, field, key] {
    if (auto h = weak.lock()) ((*h).*field).erase(key);
  });
}

const Tensor* findNamed(const NamedTensors& list, const std::string& name) {
  for (const auto& [n, t] : list) {
    if (n == name) return &t;
  }
  return nullptr;
}

std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

}  // namespace

Module::Module(std::string typeName)
    : typeName_(std::move(typeName)),
      hooks_(std::make_shared<Hooks>()),
      traceLabel_(std::make_shared<const std::string>(typeName_)) {}

void Module::setTraceLabel(std::string label) {
  traceLabel_ = std::make_shared<const std::string>(std::move(label));
}

void labelModulesForTrace(Module& root) {
  for (auto& [fqn, m] : root.namedModules()) m->setTraceLabel(fqn.empty() ? m->typeName() : fqn);
}

TensorList Module::call(const TensorList& inputs) {
  TensorList args = inputs;
  for (auto& [key, hook] : std::map<int64_t, ForwardPreHook>(hooks_->pre)) {
    if (auto replaced = hook(*this, args)) args = std::move(*replaced);
  }
  TensorList outputs;
  {
    // Hooks stay outside: FSDP's pre-forward hook waits for communication.
    trace::Span span(traceCategory_, "forward ", *traceLabel_);
    trace::ScopeGuard scope(traceLabel_);
    outputs = forwardAll(args);
  }
  for (auto& [key, hook] : std::map<int64_t, ForwardHook>(hooks_->post)) {
    if (auto replaced = hook(*this, args, outputs)) outputs = std::move(*replaced);
  }
  return outputs;
}

Tensor Module::forward(const Tensor& x) {
  TensorList out = call({x});
  DL_CHECK_T(ValueError, out.size() == 1, typeName_, ".forward: the module returned ", out.size(),
             " outputs; use call() for modules with several outputs");
  return out[0];
}

HookHandle Module::registerForwardPreHook(ForwardPreHook hook, bool prepend) {
  return addHook(hooks_, &Hooks::pre, std::move(hook), prepend);
}

HookHandle Module::registerForwardHook(ForwardHook hook, bool prepend) {
  return addHook(hooks_, &Hooks::post, std::move(hook), prepend);
}

const Tensor& Module::singleInput(const TensorList& inputs) const {
  DL_CHECK_T(ValueError, inputs.size() == 1, typeName_, " expects 1 input, got ", inputs.size());
  return inputs[0];
}

// ---- registration --------------------------------------------------------------

void Module::checkNewName(const std::string& name, const char* what) const {
  DL_CHECK_T(ValueError, !name.empty() && name.find('.') == std::string::npos, what, " name \"",
             name, "\" must be non-empty and contain no '.' (module ", typeName_, ")");
  const bool taken = findNamed(params_, name) || findNamed(buffers_, name) ||
                     std::any_of(children_.begin(), children_.end(),
                                 [&](const auto& c) { return c.first == name; });
  DL_CHECK_T(ValueError, !taken, "attribute \"", name, "\" already exists in module ", typeName_);
}

Tensor Module::registerParameter(const std::string& name, Tensor value, bool requiresGrad) {
  checkNewName(name, "parameter");
  DL_CHECK_T(ValueError, value.defined(), "registerParameter(\"", name, "\"): undefined tensor");
  if (requiresGrad) value.setRequiresGrad(true);
  params_.emplace_back(name, value);
  return value;
}

Tensor Module::registerBuffer(const std::string& name, Tensor value, bool persistent) {
  checkNewName(name, "buffer");
  buffers_.emplace_back(name, value);
  if (!persistent) nonPersistent_.push_back(name);
  return value;
}

void Module::addChild(const std::string& name, std::shared_ptr<Module> module) {
  checkNewName(name, "module");
  DL_CHECK_T(ValueError, module != nullptr, "registerModule(\"", name, "\"): null module");
  children_.emplace_back(name, std::move(module));
}

const Tensor& Module::param(const std::string& name) const {
  const Tensor* t = findNamed(params_, name);
  DL_CHECK_T(ValueError, t != nullptr, typeName_, " has no parameter \"", name, "\"");
  return *t;
}

const Tensor& Module::buffer(const std::string& name) const {
  const Tensor* t = findNamed(buffers_, name);
  DL_CHECK_T(ValueError, t != nullptr, typeName_, " has no buffer \"", name, "\"");
  return *t;
}

bool Module::hasParameter(const std::string& name) const {
  return findNamed(params_, name) != nullptr;
}

std::shared_ptr<Module> Module::child(const std::string& name) const {
  for (const auto& [n, m] : children_) {
    if (n == name) return m;
  }
  throw ValueError(typeName_ + " has no submodule \"" + name + "\"");
}

void Module::setParameter(const std::string& name, Tensor value) {
  for (auto& [n, t] : params_) {
    if (n == name) {
      t = std::move(value);
      return;
    }
  }
  throw ValueError(typeName_ + " has no parameter \"" + name + "\"");
}

void Module::setBuffer(const std::string& name, Tensor value) {
  for (auto& [n, t] : buffers_) {
    if (n == name) {
      t = std::move(value);
      return;
    }
  }
  throw ValueError(typeName_ + " has no buffer \"" + name + "\"");
}

// ---- traversal -------------------------------------------------------------------

std::vector<std::pair<std::string, Module*>> Module::namedModules() {
  std::vector<std::pair<std::string, Module*>> out;
  std::unordered_set<Module*> seen;
  std::function<void(const std::string&, Module*)> visit = [&](const std::string& prefix,
                                                               Module* m) {
    if (!seen.insert(m).second) return;
    out.emplace_back(prefix, m);
    for (const auto& [name, c] : m->children_) visit(join(prefix, name), c.get());
  };
  visit("", this);
  return out;
}

NamedTensors Module::namedParameters(bool recurse) const {
  NamedTensors out;
  std::unordered_set<const void*> seen;
  auto* self = const_cast<Module*>(this);
  auto modules =
      recurse ? self->namedModules() : std::vector<std::pair<std::string, Module*>>{{"", self}};
  for (const auto& [prefix, m] : modules) {
    for (const auto& [name, t] : m->params_) {
      if (seen.insert(t.impl()).second) out.emplace_back(join(prefix, name), t);
    }
  }
  return out;
}

TensorList Module::parameters(bool recurse) const {
  TensorList out;
  for (auto& [name, t] : namedParameters(recurse)) out.push_back(t);
  return out;
}

NamedTensors Module::namedBuffers(bool recurse) const {
  NamedTensors out;
  std::unordered_set<const void*> seen;
  auto* self = const_cast<Module*>(this);
  auto modules =
      recurse ? self->namedModules() : std::vector<std::pair<std::string, Module*>>{{"", self}};
  for (const auto& [prefix, m] : modules) {
    for (const auto& [name, t] : m->buffers_) {
      if (t.defined() && seen.insert(t.impl()).second) out.emplace_back(join(prefix, name), t);
    }
  }
  return out;
}

TensorList Module::buffers(bool recurse) const {
  TensorList out;
  for (auto& [name, t] : namedBuffers(recurse)) out.push_back(t);
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::namedChildren() const {
  return children_;
}

void Module::apply(const std::function<void(Module&)>& fn) {
  for (auto& [name, c] : children_) c->apply(fn);
  fn(*this);
}

void Module::train(bool mode) {
  training_ = mode;
  for (auto& [name, c] : children_) c->train(mode);
}

void Module::zeroGrad(bool setToNone) {
  for (Tensor& p : parameters()) {
    if (!p.grad().defined()) continue;
    if (setToNone) {
      p.setGrad(Tensor());
    } else {
      p.mutableGrad().zero_();
    }
  }
}

}  // namespace distlab::nn
