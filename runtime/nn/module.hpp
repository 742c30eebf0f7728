#pragma once
// Module: the base of layers and models (PyTorch: torch.nn.Module).
//
// Parameters, buffers and submodules are kept in registration order; their
// fully qualified names follow PyTorch ("layers.0.weight"). namedParameters()
// lists a tensor shared by two modules once (tied weights), stateDict() lists
// it under every name, as PyTorch does.
//
// Calling a module (call(), forward(), operator()) runs, in order: the forward
// pre-hooks (each may replace the inputs), forwardAll() (the subclass's
// computation, no hooks), the forward hooks (each may replace the outputs).
// Containers call their children through call(), so hooks on submodules run
// (FSDP's per-module all-gather relies on it).
//
// Parameters are looked up by name at every forward (param("weight")), so an
// engine may swap a parameter's tensor with setParameter() (FSDP unsharding).
// Thread-safety: none; a module is used by one thread at a time.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/autograd/hooks.hpp"
#include "runtime/core/trace.hpp"
#include "runtime/nn/state_dict.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab::nn {

using TensorList = std::vector<Tensor>;
using HookHandle = autograd::RemovableHandle;
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Module;
// (module, inputs) -> replacement inputs, or nullopt to keep them.
using ForwardPreHook = std::function<std::optional<TensorList>(Module&, const TensorList&)>;
// (module, inputs, outputs) -> replacement outputs, or nullopt to keep them.
using ForwardHook =
    std::function<std::optional<TensorList>(Module&, const TensorList&, const TensorList&)>;

// (module, gradients w.r.t. the outputs) -- before the module's backward.
using BackwardPreHook = std::function<void(Module&, const TensorList& gradOutputs)>;
// (module, gradients w.r.t. the inputs, gradients w.r.t. the outputs).
using BackwardHook =
    std::function<void(Module&, const TensorList& gradInputs, const TensorList& gradOutputs)>;

// Result of a non-strict loadStateDict (PyTorch: _IncompatibleKeys).
struct LoadStateDictResult {
  std::vector<std::string> missingKeys;
  std::vector<std::string> unexpectedKeys;
};

class Module {
 public:
  explicit Module(std::string typeName);
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The class name used in messages ("Linear", "TwoLinLayerNet").
  const std::string& typeName() const { return typeName_; }

  // ---- tracing (runtime/core/trace.hpp) ---------------------------------------------
  // The name of this module's spans ("forward <label>") and of the autograd
  // nodes recorded inside its forward ("backward <label>"); the type name until
  // labelModulesForTrace() gives it the FQN.
  const trace::Label& traceLabel() const { return traceLabel_; }
  void setTraceLabel(std::string label);
  // What this module's forward span counts as (Note [Trace categories]):
  // kCompute, or kPhase for a wrapper whose forward also communicates (DDP
  // syncs buffers and rebuilt buckets there) around a module that computes.
  void setTraceCategory(trace::Category category) { traceCategory_ = category; }

  // ---- forward --------------------------------------------------------------------
  // The computation; subclasses override. Called without hooks.
  virtual TensorList forwardAll(const TensorList& inputs) = 0;
  // Hooks + forwardAll (PyTorch: module(*inputs)).
  TensorList call(const TensorList& inputs);
  // call({x}) for modules with one input and one output; throws Error otherwise.
  Tensor forward(const Tensor& x);
  Tensor operator()(const Tensor& x) { return forward(x); }

  // Hooks run in registration order (prepend: before the existing ones).
  HookHandle registerForwardPreHook(ForwardPreHook hook, bool prepend = false);
  HookHandle registerForwardHook(ForwardHook hook, bool prepend = false);
  // Backward hooks (PyTorch: register_full_backward_pre_hook / _hook), built on
  // a forward hook that puts a kAll multi-grad hook (Note [Multi-grad hooks])
  // on the outputs (pre-hook) or the inputs (hook) that require grad at each
  // call; entries for tensors that got no gradient are undefined. The pre-hook
  // runs once all output gradients exist, i.e. before the module's backward;
  // the hook once all input gradients exist (gradOutputs there are those the
  // pre-stage saw). A call whose outputs (inputs) need no grad registers none.
  HookHandle registerFullBackwardPreHook(BackwardPreHook hook);
  HookHandle registerFullBackwardHook(BackwardHook hook);

  // ---- registration ----------------------------------------------------------------
  // Registers `value` under `name` (no dots, unique within this module) and
  // marks it requiring grad (PyTorch: nn.Parameter). Returns the handle.
  Tensor registerParameter(const std::string& name, Tensor value, bool requiresGrad = true);
  // Non-persistent buffers are left out of stateDict().
  Tensor registerBuffer(const std::string& name, Tensor value, bool persistent = true);
  template <typename M>
  std::shared_ptr<M> registerModule(const std::string& name, std::shared_ptr<M> module) {
    addChild(name, module);
    return module;
  }

  // Own (not recursive) parameter/buffer/child by local name; throws ValueError.
  const Tensor& param(const std::string& name) const;
  const Tensor& buffer(const std::string& name) const;
  bool hasParameter(const std::string& name) const;
  std::shared_ptr<Module> child(const std::string& name) const;
  // Replaces an own parameter's tensor (same name, any tensor).
  void setParameter(const std::string& name, Tensor value);
  void setBuffer(const std::string& name, Tensor value);

  // ---- traversal (registration order, FQNs) ----------------------------------------
  NamedTensors namedParameters(bool recurse = true) const;  // duplicates removed
  TensorList parameters(bool recurse = true) const;
  NamedTensors namedBuffers(bool recurse = true) const;
  TensorList buffers(bool recurse = true) const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> namedChildren() const;
  // This module (name "") and every descendant, depth first, each once.
  std::vector<std::pair<std::string, Module*>> namedModules();
  // Calls fn on every descendant, children first, then on this module.
  void apply(const std::function<void(Module&)>& fn);

  // ---- modes and gradients -----------------------------------------------------------
  virtual void train(bool mode = true);
  void eval() { train(false); }
  bool isTraining() const { return training_; }
  // PyTorch's zero_grad: set_to_none (default) drops .grad, otherwise zeroes it.
  void zeroGrad(bool setToNone = true);

  // ---- state ---------------------------------------------------------------------------
  // Parameters and persistent buffers, detached handles sharing storage.
  StateDict stateDict() const;
  // ---- devices (Note [Meta models], module_device.cpp) ---------------------------------
  // Replaces every parameter and buffer, recursively, with an uninitialised
  // tensor of the same shape and dtype on `device`; requires_grad is kept and
  // tied tensors stay tied (PyTorch: module.to_empty(device=...)).
  void toEmpty(Device device);
  // Re-draws this module's own parameters and buffers with the layer's
  // default initialisation from `gen` (layers.hpp), in place. The base does
  // nothing (modules without own state). See initializeParameters().
  virtual void resetParameters(Generator& gen);

  // Copies values in place (no grad). Strict: missing/unexpected keys throw Error
  // listing them ("Error(s) in loading state_dict for <Type>: ..."); shape
  // mismatches always throw.
  LoadStateDictResult loadStateDict(const StateDict& state, bool strict = true);

 protected:
  // The single input of a one-input module; throws naming the module otherwise.
  const Tensor& singleInput(const TensorList& inputs) const;
  // Copies `value` into the own parameter or buffer `name` in place (no grad).
  void fillState(const std::string& name, const Tensor& value);

 public:
  struct Hooks;  // implementation detail (module.cpp)

 private:
  void addChild(const std::string& name, std::shared_ptr<Module> module);
  void checkNewName(const std::string& name, const char* what) const;
  void collectState(const std::string& prefix, StateDict& out) const;

  std::string typeName_;
  bool training_ = true;
  NamedTensors params_;
  NamedTensors buffers_;
  std::vector<std::string> nonPersistent_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  std::shared_ptr<Hooks> hooks_;
  trace::Label traceLabel_;
  trace::Category traceCategory_ = trace::Category::kCompute;
};

// Re-initialises every parameter and buffer of `root` from `gen`, visiting
// modules depth first in registration order: with a fresh generator of the
// seed a model was built with, it gives the values construction gave (a
// tensor tied into a later module keeps its first module's values, as
// construction does). The second half of materialising a meta model:
//   model->toEmpty(Device::cpu()); initializeParameters(*model, gen);
void initializeParameters(Module& root, Generator& gen);

// Labels `root` and every descendant with its FQN (the root with its type
// name) for traces, so that "forward layers.0" names one module of a model.
void labelModulesForTrace(Module& root);

}  // namespace distlab::nn
