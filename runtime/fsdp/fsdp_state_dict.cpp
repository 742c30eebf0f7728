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

}  // namespace

ShardedStateDict shardedStateDict(FSDPModule& root) {
  DL_CHECK_T(ValueError, !root.paramGroup().isUnsharded() || root.paramGroup().empty(),
             "sharded state dict: call it outside forward/backward (the root is unsharded); ",
             "call reshard() first");
  ShardedStateDict out;
  const comm::DeviceMesh mesh = meshOf(root);
  for (const auto& [fqn, t] : root.module().stateDict()) {
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
