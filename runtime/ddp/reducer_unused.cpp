// Iteration set-up, unused-parameter detection and the reference error texts
// (docs/pytorch-semantics.md, "DDP error texts").
#include <unordered_set>

#include <algorithm>

#include <fmt/format.h>

#include "runtime/autograd/engine.hpp"
#include "runtime/core/debug_level.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/logging.hpp"
#include "runtime/ddp/reducer_internal.hpp"

namespace distlab::ddp {

void Reducer::prepareForForward() {
  ++numIterations_;
  timing_ = IterationTiming{};
  timing_.iteration = numIterations_;
  timing_.forwardComputeStartNs = monotonicNowNs();
  forwardVote_.reset();
  voteFactor_.reset();
}

void Reducer::resetBucketCounting() {
  nextBucket_ = 0;
  for (auto& bucket : buckets_) {
    bucket->pending = bucket->variableIndices.size();
    bucket->readyNs = 0;
    bucket->launchedNs = 0;
    bucket->completedNs = std::make_shared<std::atomic<int64_t>>(0);  // see launchBucket
    bucket->communicated = true;
    bucket->future.reset();
  }
  if (options_.staticGraph) hookCountsThisIteration_ = hookCounts_;
}

void Reducer::prepareForBackward(const std::vector<Tensor>& outputs) {
  timing_.backwardComputeStartNs = monotonicNowNs();
  expectAutogradHooks_ = true;
  firstHookCalled_ = false;  // counted at the first hook (Note [Counting backward passes])
  finalizeQueued_ = false;
  resetBucketCounting();
  hasMarkedUnused_ = false;
  std::fill(readyThisIteration_.begin(), readyThisIteration_.end(), 0);
  std::fill(observedCounts_.begin(), observedCounts_.end(), 0);
  std::fill(locallyUnusedThisIteration_.begin(), locallyUnusedThisIteration_.end(), 0);
  if (dynamicFindUnused()) {
    unusedParameters_.clear();
    searchUnusedParameters(outputs);
  } else if (staticGraphRecorded()) {
    for (size_t u : unusedParameters_) locallyUnusedThisIteration_[u] = 1;
  }
}

void Reducer::searchUnusedParameters(const std::vector<Tensor>& outputs) {
  std::unordered_set<const TensorImpl*> reachable;
  for (const Tensor& leaf : autograd::reachableLeaves(outputs)) reachable.insert(leaf.impl());
  for (size_t i = 0; i < params_.size(); ++i) {
    if (reachable.count(params_[i].impl()) == 0) {
      unusedParameters_.push_back(i);
      locallyUnusedThisIteration_[i] = 1;
    }
  }
  if (unusedParameters_.empty() && !warnedNoUnused_) {
    warnedNoUnused_ = true;
    DL_LOG(WARNING,
           "find_unused_parameters=True was specified in DDP constructor, but did not find any "
           "unused parameters in the forward pass. This flag results in an extra traversal of "
           "the autograd graph every iteration,  which can adversely affect performance. If your "
           "model indeed never has any unused parameters in the forward pass, consider turning "
           "this flag off. Note that this warning may be a false positive if your model has flow "
           "control causing later iterations to have unused parameters.");
  }
}

std::vector<size_t> Reducer::unmarkedParamIndices() const {
  std::vector<size_t> out;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!readyThisIteration_[i]) out.push_back(i);
  }
  return out;
}

void Reducer::ensurePriorReductionFinished() const {
  if (!requireFinalize_) return;
  const std::vector<size_t> unmarked = unmarkedParamIndices();
  const std::string outputsNotUsed =
      "making sure all `forward` function outputs participate in calculating loss. ";
  const std::string ddpBug =
      "\nIf you already have done the above, then the distributed data parallel module wasn't "
      "able to locate the output tensors in the return value of your module's `forward` "
      "function. Please include the loss function and the structure of the return value of "
      "`forward` of your module when reporting this issue (e.g. list, dict, iterable).";
  std::string msg =
      "Expected to have finished reduction in the prior iteration before starting a new one. "
      "This error indicates that your module has parameters that were not used in producing "
      "loss. ";
  if (options_.staticGraph) {
    msg =
        "Expected to have finished reduction in the prior iteration before starting a new one. "
        "This error indicates that your training graph has changed in this iteration, e.g., one "
        "parameter is used in first iteration, but then got unused in the second iteration. "
        "this is not compatible with static_graph set to True.";
  } else if (!options_.findUnusedParameters) {
    msg +=
        "You can enable unused parameter detection by passing the keyword argument "
        "`find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and by \n";
    msg += outputsNotUsed + ddpBug;
  } else {
    msg +=
        "Since `find_unused_parameters=True` is enabled, this likely  means that not all "
        "`forward` outputs participate in computing loss. You can fix this by ";
    msg += outputsNotUsed + ddpBug;
  }
  const int rank = group_->rank();
  const std::string indexInfo = fmt::format(
      "\nParameter indices which did not receive grad for rank {}: {}", rank,
      detail::joinIndices(unmarked));
  if (debugLevel() == DebugLevel::kOff) {
    msg += indexInfo;
    msg +=
        "\n In addition, you can set the environment variable TORCH_DISTRIBUTED_DEBUG to either "
        "INFO or DETAIL to print out information about which particular parameters did not "
        "receive gradient on this rank as part of this error";
  } else {
    std::string names;
    for (size_t i : unmarked) {
      DL_LOG(INFO, "[Rank {}] Parameter: {} did not get gradient in backwards pass.", rank,
             names_[i]);
      names += (names.empty() ? "" : ", ") + names_[i];
    }
    msg += fmt::format("\nParameters which did not receive grad for rank {}: {}", rank, names);
    msg += indexInfo;
  }
  throw Error(msg);
}

void Reducer::checkMarkedTwice(size_t index) const {
  if (!readyThisIteration_[index]) return;
  const bool withName = debugLevel() != DebugLevel::kOff;
  std::string paramInfo = fmt::format(
      "Parameter at index {}{} has been marked as ready twice. This means that multiple autograd "
      "engine  hooks have fired for this particular parameter during this iteration.",
      index, withName ? " with name " + names_[index] : std::string());
  if (!withName) {
    paramInfo +=
        " You can set the environment variable TORCH_DISTRIBUTED_DEBUG to either INFO or DETAIL "
        "to print parameter names for further debugging.";
  }
  std::string msg =
      "Expected to mark a variable ready only once. This error is caused by one of the "
      "following reasons: 1) Use of a module parameter outside the `forward` function. Please "
      "make sure model parameters are not shared across multiple concurrent forward-backward "
      "passes. or try to use _set_static_graph() as a workaround if this module graph does not "
      "change during training loop.2) Reused parameters in multiple reentrant backward passes. "
      "For example, if you use multiple `checkpoint` functions to wrap the same part of your "
      "model, it would result in the same set of parameters been used by different reentrant "
      "backward passes multiple times, and hence marking a variable ready multiple times. DDP "
      "does not support such use cases in default. You can try to use _set_static_graph() as a "
      "workaround if your module graph does not change over iterations.";
  if (dynamicFindUnused()) {
    msg +=
        "\n3) Incorrect unused parameter detection. The return value of the `forward` function "
        "is inspected by the distributed data parallel wrapper to figure out if any of the "
        "module's parameters went unused. For unused parameters, DDP would not expect gradients "
        "from then. However, if an unused parameter becomes part of the autograd graph at a "
        "later point in time (e.g., in a reentrant backward when using `checkpoint`), the "
        "gradient will show up unexpectedly. If all parameters in the model participate in the "
        "backward pass, you can disable unused parameter detection by passing the keyword "
        "argument `find_unused_parameters=False` to `torch.nn.parallel.DistributedDataParallel`.";
  }
  throw Error(msg + "\n" + paramInfo);
}

}  // namespace distlab::ddp
