#include "runtime/fsdp/fsdp_state_dict.hpp"

#include "runtime/autograd/grad_mode.hpp"
#include "runtime/comm/group_management.hpp"
#include "runtime/core/check.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::fsdp {
namespace {

// stateDict() hands out detached handles: compare the viewed memory.
bool sameView(const Tensor& a, const Tensor& b) {
  return a.storage() == b.storage() && a.storageOffset() == b.storageOffset() &&
         a.sizes() == b.sizes() && a.strides() == b.strides();
}

const FSDPParam* findParam(FSDPModule& root, const Tensor& t) {
  for (auto& s : root.fsdpModulesInTree()) {
    for (const auto& p : s->paramGroup().params()) {
      if (sameView(p->sharded(), t)) return p.get();
    }
  }
  return nullptr;
}

comm::DeviceMesh meshOf(FSDPModule& root) { return root.options().mesh.value(); }

dtensor::DTensor replicated(const Tensor& t, const comm::DeviceMesh& mesh) {
  return dtensor::DTensor::fromLocal(
      t, mesh, dtensor::Placements(mesh.ndim(), dtensor::Placement::replicate()), t.sizes());
}

// Note [State dicts of list groups]
// fullyShard({m1, m2}) may make a root of several modules that share no parent
// module (PyTorch users then call state_dict() on each module). A state dict of
// such a root covers every module, with keys "modules[i].<fqn>", so that save,
// load and fullStateDict round-trip all of them; a single-module root keeps
// its FQNs unchanged.
std::string listPrefix(const FSDPModule& root, size_t i) {
  return root.modules().size() == 1 ? std::string() : "modules[" + std::to_string(i) + "].";
}

}  // namespace

nn::StateDict rootStateDict(const FSDPModule& root) {
  nn::StateDict out;
  for (size_t i = 0; i < root.modules().size(); ++i) {
    for (const auto& [fqn, t] : root.modules()[i]->stateDict()) {
      out.insert(listPrefix(root, i) + fqn, t);
    }
  }
  return out;
}

nn::NamedTensors rootNamedParameters(const FSDPModule& root) {
  nn::NamedTensors out;
  for (size_t i = 0; i < root.modules().size(); ++i) {
    for (const auto& [fqn, t] : root.modules()[i]->namedParameters()) {
      out.emplace_back(listPrefix(root, i) + fqn, t);
    }
  }
  return out;
}

ShardedStateDict shardedStateDict(FSDPModule& root) {
  DL_CHECK_T(ValueError, !root.paramGroup().isUnsharded() || root.paramGroup().empty(),
             "sharded state dict: call it outside forward/backward (the root is unsharded); ",
             "call reshard() first");
  ShardedStateDict out;
  const comm::DeviceMesh mesh = meshOf(root);
  for (const auto& [fqn, t] : rootStateDict(root)) {
    if (const FSDPParam* p = findParam(root, t)) {
      out.emplace_back(fqn, p->shardedDTensor());
    } else {
      out.emplace_back(fqn, replicated(t, mesh));
    }
  }
  return out;
}

nn::StateDict fullStateDict(FSDPModule& root, int rank) {
  nn::StateDict out;
  const bool keep = comm::getRank() == rank;
  for (const auto& [fqn, d] : shardedStateDict(root)) {
    Tensor full = d.fullTensor();
    if (keep) out.insert(fqn, full);
  }
  return out;
}

void loadShardedStateDict(FSDPModule& root, const ShardedStateDict& state) {
  ShardedStateDict mine = shardedStateDict(root);
  DL_CHECK_T(ValueError, mine.size() == state.size(), "load sharded state dict: the model has ",
             mine.size(), " entries but the state dict ", state.size(),
             "; is the state dict from another model?");
  autograd::NoGradGuard noGrad;
  for (size_t i = 0; i < mine.size(); ++i) {
    const auto& [fqn, d] = mine[i];
    const auto& [key, src] = state[i];
    DL_CHECK_T(ValueError, fqn == key, "load sharded state dict: expected key '", fqn,
               "' at position ", i, " but found '", key, "' (a state dict from another model?)");
    DL_CHECK_T(ValueError, d.shape() == src.shape() && d.dtype() == src.dtype() &&
                               d.placements() == src.placements(),
               "load sharded state dict: '", fqn, "' is ", shapeToString(src.shape()), " ",
               dtypeName(src.dtype()), " in the state dict but ", shapeToString(d.shape()), " ",
               dtypeName(d.dtype()), " in the model (a state dict from another model?)");
    Tensor dst = d.toLocal();
    dst.copy_(src.toLocal());
  }
}

}  // namespace distlab::fsdp
