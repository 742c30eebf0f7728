#pragma once
// DistributedDataParallel (PyTorch: torch.nn.parallel.DistributedDataParallel).
//
//   auto model = std::make_shared<nn::Mlp>(nn::MlpOptions{}, gen);
//   ddp::DistributedDataParallel ddp(model, group, {.findUnusedParameters = true});
//   auto loss = nn::crossEntropyLoss(ddp.forward(x), y);
//   autograd::backward(loss);   // gradients averaged over the group when it returns
//   optimizer.step();
//
// Construction (a collective over `group`, with init_sync): checks that every
// rank has the same parameters (count, then shapes and strides; every rank
// raises "DDP expects same model across all ranks ..." or the shape message,
// so no rank is left waiting), broadcasts parameters and buffers from rank 0
// (coalesced, 250 MiB chunks), builds the Reducer (reducer.hpp) and logs
// "DDP Initialized with:" at TORCH_DISTRIBUTED_DEBUG >= INFO. The constructor
// reads the environment once (readRuntimeEnv, Note [Environment read once]):
// DDP_SET_LAST_BUCKET_CAP goes to ReducerOptions, MASTER_ADDR/MASTER_PORT to
// the logging data; a bad variable is a ValueError naming it.
//
// forward (a collective when buffers are broadcast): with grad mode on and
// gradient sync enabled, starts a reducer iteration, raises if the previous
// one did not finish, rebuilds buckets once (second forward), broadcasts
// buffers from rank 0 (broadcast_buffers), runs the module, and arms the
// Reducer (searching unused parameters with find_unused_parameters).
// The backward of a function of the outputs is the third synchronisation point.
//
// Join (Note [DDP under Join], ddp_join.cpp): DDP is a join::Joinable. Inside an
// enabled Join, forward first calls Join::notifyJoinContext (the Reducer learns
// the number of ranks still training from that vote when
// divide_by_initial_world_size is false), agrees on the rank to broadcast
// buffers from (the highest rank still training), and allreduces whether this
// iteration synchronises gradients; a joined rank's hook shadows all of that
// and the backward collectives.
//
// State dict: the module is registered as child "module", so keys read
// "module.layers.0.weight" as in PyTorch. Not thread-safe; one DDP instance
// per rank, used from one thread.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/comm/process_group.hpp"
#include "runtime/core/runtime_env.hpp"
#include "runtime/ddp/ddp_logging.hpp"
#include "runtime/ddp/ddp_options.hpp"
#include "runtime/ddp/grad_bucket.hpp"
#include "runtime/ddp/reducer.hpp"
#include "runtime/join/join.hpp"
#include "runtime/nn/module.hpp"

namespace distlab::ddp {

// PyTorch's broadcast bucket size for module states (250 MiB).
inline constexpr int64_t kBroadcastBucketBytes = 250LL * 1024 * 1024;

class DistributedDataParallel : public nn::Module, public join::Joinable {
 public:
  DistributedDataParallel(std::shared_ptr<nn::Module> module, comm::ProcessGroupPtr group,
                          DDPOptions options = {});
  ~DistributedDataParallel() override;

  nn::TensorList forwardAll(const nn::TensorList& inputs) override;

  nn::Module& module() const { return *module_; }
  const std::shared_ptr<nn::Module>& modulePtr() const { return module_; }
  const DDPOptions& options() const { return options_; }
  const comm::ProcessGroupPtr& processGroup() const { return group_; }

  // ---- no_sync ---------------------------------------------------------------------
  // Scope guard (PyTorch: `with ddp.no_sync():`). Forward AND backward must run
  // inside the scope; gradients accumulate locally and are synchronised by the
  // first forward-backward after it.
  class NoSyncGuard {
   public:
    explicit NoSyncGuard(DistributedDataParallel& ddp);
    ~NoSyncGuard();
    NoSyncGuard(NoSyncGuard&& other) noexcept;
    NoSyncGuard(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(NoSyncGuard&&) = delete;

   private:
    DistributedDataParallel* ddp_;
    bool previous_;
  };
  [[nodiscard]] NoSyncGuard noSync() { return NoSyncGuard(*this); }
  bool requireBackwardGradSync() const { return requireBackwardGradSync_; }
  void setRequireBackwardGradSync(bool value) { requireBackwardGradSync_ = value; }

  // ---- communication hooks ---------------------------------------------------------------
  // Once, before the first synchronising backward (Error otherwise). `name`
  // shows in the logging data (PyTorch logs the hook's qualified name).
  void registerCommHook(HookState state, CommHookFn hook, std::string name = "custom");
  // PyTorch _set_static_graph(): before the first forward only.
  void setStaticGraph();

  // ---- Join (ddp_join.cpp) -------------------------------------------------------------
  // PyTorch ddp.join(): a Join over this model alone, forwarding
  // divide_by_initial_world_size. End the scope with exit() (join.hpp).
  join::Join join(bool divideByInitialWorldSize = true, bool enable = true,
                  bool throwOnEarlyTermination = false);
  // kwargs: "divide_by_initial_world_size" (default true). Error when some
  // parameters' all-reduce is delayed (delay_all_reduce_named_params): its
  // position among the bucket collectives is not fixed, so it cannot be shadowed.
  std::unique_ptr<join::JoinHook> joinHook(const join::JoinKwargs& kwargs) override;
  Device joinDevice() const override;
  comm::ProcessGroupPtr joinProcessGroup() const override { return group_; }

  // ---- introspection ----------------------------------------------------------------------
  // A snapshot of the statistics, runtime fields refreshed from the reducer.
  DDPLoggingData loggingData() const;
  // Null when every parameter's all-reduce is delayed (delay_all_reduce_named_params).
  Reducer* reducer() { return reducer_.get(); }
  const Reducer* reducer() const { return reducer_.get(); }

 private:
  void buildReducer(const nn::NamedTensors& params, const RuntimeEnv& env);
  void setUpDelayedAllReduce(const nn::NamedTensors& params);
  void onDelayedAllReduceHook();
  void fillConstructionData(const RuntimeEnv& env);
  void updateRuntimeStats();
  bool willSyncModuleBuffers() const;
  // Join helpers (ddp_join.cpp).
  class JoinHookImpl;
  void syncModuleBuffers(bool joined);
  comm::WorkPtr checkGlobalRequiresBackwardGradSync(bool joined);
  int findCommonRank(bool candidate);
  void matchAllReduceForBackward();
  void syncFinalModel(bool isLastJoiner);

  std::shared_ptr<nn::Module> module_;
  comm::ProcessGroupPtr group_;
  DDPOptions options_;
  std::unique_ptr<Reducer> reducer_;
  bool requireBackwardGradSync_ = true;
  bool requireForwardParamSync_ = true;
  bool divideByInitialWorldSize_ = true;

  // delay_all_reduce_named_params.
  std::vector<Tensor> delayedParams_;
  std::vector<Tensor> delayedViews_;
  Tensor delayedBuffer_;
  bool delayedArmed_ = false;
  autograd::RemovableHandle delayedHookHandle_;

  mutable DDPLoggingData logging_;
  int64_t lastSampledIteration_ = 0;
};

// ---- collectives used by construction and forward (ddp_sync.cpp) --------------------------
// PyTorch verify_params_across_processes, every rank raising the same kind of
// error (allgathers instead of a broadcast, so no rank waits for a failed peer).
void verifyParamsAcrossProcesses(const comm::ProcessGroupPtr& group,
                                 const std::vector<Tensor>& params);
// Broadcasts `tensors` from `root` in place, packed per dtype into flat
// buffers of at most `bucketBytes` (one broadcast each). Waits for each.
void broadcastCoalesced(const comm::ProcessGroupPtr& group, const std::vector<Tensor>& tensors,
                        int64_t bucketBytes, int root = 0);

}  // namespace distlab::ddp
