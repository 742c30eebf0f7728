// FSDP as a join::Joinable: Note [FSDP under Join] in fsdp_join.hpp.
#include "runtime/fsdp/fsdp_join.hpp"

#include <fmt/format.h>

#include "runtime/comm/group_management.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/fsdp/fsdp_internal.hpp"

namespace distlab::fsdp {
namespace {

void dropShardedGrads(const std::vector<FSDPParamGroup*>& groups) {
  for (FSDPParamGroup* g : groups) {
    for (const auto& p : g->params()) {
      if (AutogradMeta* meta = p->sharded().autogradMeta()) meta->grad = Tensor();
    }
  }
}

// Stops the record while a joined rank replays it (the replay must not
// overwrite the schedule it follows).
struct PauseRecording {
  JoinRecord& record;
  explicit PauseRecording(JoinRecord& r) : record(r) { record.setRecording(false); }
  ~PauseRecording() { record.setRecording(true); }
};

}  // namespace

// ---- JoinRecord --------------------------------------------------------------------------

void JoinRecord::beginIteration(comm::WorkPtr vote) {
  current_.clear();
  vote_ = divideByInitial_ ? nullptr : std::move(vote);
  scale_ = 1.0;
}

double JoinRecord::gradientScale() {
  if (!vote_) return scale_;
  vote_->wait();
  const double active = vote_->result().front().to(Device::cpu()).item<double>();
  vote_.reset();
  if (active < 1.0) {
    throw Error(fmt::format("FSDP under Join: the vote counted {} ranks still training in an "
                            "iteration this rank trains in; expected at least 1", active));
  }
  scale_ = static_cast<double>(world_) / active;
  return scale_;
}

// ---- FSDPModule's Join entry points ------------------------------------------------------

JoinRecord& FSDPModule::enableJoin(join::Joinable& joinable) {
  lazyInit();
  if (!isRoot_) {
    throw ValueError(fmt::format(
        "FSDPJoinable: the FSDP module of {} is not a root (it belongs to the tree of another "
        "fullyShard call); pass the root module's FSDPModule",
        module().typeName()));
  }
  if (!ctx_->join) ctx_->join = std::make_unique<JoinRecord>();
  ctx_->joinable = &joinable;
  for (FSDPModule* s : ctx_->modules) s->group_->setJoinRecord(ctx_->join.get());
  return *ctx_->join;
}

void FSDPModule::disableJoin() {
  if (!ctx_) return;
  for (FSDPModule* s : ctx_->modules) s->group_->setJoinRecord(nullptr);
  ctx_->joinable = nullptr;
  ctx_->join.reset();
}

std::vector<FSDPParamGroup*> FSDPModule::rootGroups() {
  std::vector<FSDPParamGroup*> out;
  if (!ctx_) return out;
  for (FSDPModule* s : ctx_->modules) out.push_back(s->group_.get());
  return out;
}

// ---- the hook ----------------------------------------------------------------------------

class FSDPJoinable::Hook : public join::JoinHook {
 public:
  explicit Hook(FSDPJoinable& owner) : owner_(owner) {}

  void mainHook() override {
    JoinRecord& record = *owner_.record_;
    if (schedule_.empty()) takeSchedule(record);
    std::vector<FSDPParamGroup*> groups = owner_.root_.rootGroups();
    PauseRecording pause(record);
    dropShardedGrads(groups);
    for (const FsdpCollective& op : schedule_) replay(op);
    for (FSDPParamGroup* g : groups) {
      g->finishReduction();
      g->reshard();
    }
    if (owner_.optimizer_) owner_.optimizer_->step();
  }

 private:
  void takeSchedule(const JoinRecord& record) {
    schedule_ = record.current();
    if (schedule_.empty()) {
      throw Error(fmt::format(
          "FSDP under Join: rank {} ran out of inputs before completing a training iteration, "
          "so it has no FSDP schedule to shadow for its peers (group '{}'); give every rank at "
          "least one batch",
          owner_.group_->rank(), owner_.group_->name()));
    }
  }

  static void replay(const FsdpCollective& op) {
    FSDPParamGroup& g = *op.group;
    switch (op.kind) {
      case FsdpCollective::Kind::kAllGather:
        g.reshard();  // a backward re-gather follows the forward one
        g.unshard();
        g.waitForUnshard();
        return;
      case FsdpCollective::Kind::kPostForwardAllGather:
        if (!g.isUnsharded() || !g.hasPostForwardGroup()) {
          throw Error("FSDP under Join: the recorded schedule has a post-forward all-gather "
                      "without the forward all-gather before it; cannot shadow it");
        }
        g.reshardAfterForward();
        g.unshard();
        g.waitForUnshard();
        return;
      case FsdpCollective::Kind::kReduceScatter:
        g.setZeroGradients(op.reduced);
        g.resetForNextBackward();
        g.postBackward();
        return;
      case FsdpCollective::Kind::kReplicaAllReduce:
        g.finishReduction();
        return;
    }
  }

  FSDPJoinable& owner_;
  std::vector<FsdpCollective> schedule_;
};

// ---- FSDPJoinable ------------------------------------------------------------------------

namespace {

comm::ProcessGroupPtr defaultJoinGroup(const comm::DeviceMesh& mesh) {
  if (mesh.ndim() == 1) return mesh.getGroup(std::optional<int>(0));
  return comm::defaultGroup();
}

}  // namespace

FSDPJoinable::FSDPJoinable(FSDPModule& root, optim::Optimizer* optimizer,
                           comm::ProcessGroupPtr group)
    : root_(root), optimizer_(optimizer), group_(std::move(group)) {
  const comm::DeviceMesh& mesh = root.options().mesh.value();
  if (!group_) group_ = defaultJoinGroup(mesh);
  if (!group_ || group_->size() != mesh.size()) {
    throw ValueError(fmt::format(
        "FSDPJoinable: the join group has {} ranks but the FSDP mesh has {}; the Join vote must "
        "count every rank of the mesh (pass the group of all its ranks)",
        group_ ? group_->size() : 0, mesh.size()));
  }
  record_ = &root_.enableJoin(*this);
  record_->setWorld(mesh.size());
}

FSDPJoinable::~FSDPJoinable() { root_.disableJoin(); }

std::unique_ptr<join::JoinHook> FSDPJoinable::joinHook(const join::JoinKwargs& kwargs) {
  record_->setDivideByInitialWorldSize(kwargs.flag("divide_by_initial_world_size", true));
  return std::make_unique<Hook>(*this);
}

Device FSDPJoinable::joinDevice() const {
  std::vector<FSDPParamGroup*> groups = root_.rootGroups();
  for (FSDPParamGroup* g : groups) {
    if (!g->empty()) return g->params().front()->unsharded().device();
  }
  return Device::cpu();
}

}  // namespace distlab::fsdp
