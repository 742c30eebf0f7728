// DistributedDataParallel's statistics: construction data and runtime samples
// (ddp_logging.hpp).
#include <algorithm>

#include <fmt/format.h>

#include "runtime/core/debug_level.hpp"
#include "runtime/core/logging.hpp"
#include "runtime/ddp/distributed_data_parallel.hpp"

namespace distlab::ddp {
namespace {

std::string cTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "float";
    case DType::kFloat64: return "double";
    case DType::kFloat16: return "c10::Half";
    case DType::kBFloat16: return "c10::BFloat16";
    default: return std::string(dtypeName(dtype));
  }
}

}  // namespace

void DistributedDataParallel::fillConstructionData(const RuntimeEnv& env) {
  DDPLoggingData& d = logging_;
  d.rank = group_->rank();
  d.worldSize = group_->size();
  d.moduleName = module_->typeName();
  d.backendName = group_->backendName();
  d.broadcastBuffers = options_.broadcastBuffers;
  d.bucketCapBytes = options_.bucketBytesCap();
  d.findUnusedParameters = options_.findUnusedParameters;
  d.gradientAsBucketView = options_.gradientAsBucketView;
  d.staticGraph = options_.staticGraph;
  d.skipAllReduceUnusedParams = options_.skipAllReduceUnusedParams;
  std::vector<std::string> dtypes;
  for (const auto& [name, p] : module_->namedParameters()) {
    if (!p.requiresGrad()) continue;
    ++d.numParameterTensors;
    d.totalParameterSizeBytes += static_cast<int64_t>(p.nbytes());
    const std::string t = cTypeName(p.dtype());
    if (std::find(dtypes.begin(), dtypes.end(), t) == dtypes.end()) dtypes.push_back(t);
  }
  d.dtypes.clear();
  for (const auto& t : dtypes) d.dtypes += (d.dtypes.empty() ? "" : ", ") + t;
  d.masterAddr = env.masterAddr.value_or("N/A");
  d.masterPort = env.masterPort ? std::to_string(*env.masterPort) : "N/A";
  d.torchDistributedDebug = std::string(debugLevelName(debugLevel()));
  d.bucketSizes.clear();
  if (reducer_) {
    for (const BucketInfo& b : reducer_->bucketInfos()) d.bucketSizes.push_back(b.bytes());
  }
}

void DistributedDataParallel::updateRuntimeStats() {
  if (!reducer_) return;
  const IterationTiming t = reducer_->lastIteration();
  if (!t.complete() || t.iteration <= lastSampledIteration_ ||
      !shouldSampleIteration(t.iteration)) {
    return;
  }
  lastSampledIteration_ = t.iteration;
  recordSample(logging_, t);
  logging_.unusedParameterSize = 0;
  logging_.unusedParameterNames.clear();
  for (size_t i : reducer_->unusedParameters()) {
    logging_.unusedParameterSize += static_cast<int64_t>(reducer_->parameters()[i].nbytes());
    logging_.unusedParameterNames.push_back(reducer_->parameterNames()[i]);
  }
  logging_.iteration = reducer_->numIterations();
  if (debugLevel() == DebugLevel::kDetail) DL_LOG(INFO, "{}", formatRuntimeLog(logging_));
}

DDPLoggingData DistributedDataParallel::loggingData() const {
  DDPLoggingData d = logging_;
  if (!reducer_) return d;
  d.iteration = reducer_->numIterations();
  d.canSetStaticGraph = reducer_->graphStaticSoFar();
  d.hasRebuiltBuckets = reducer_->hasRebuiltBuckets();
  d.bucketSizes.clear();
  for (const BucketInfo& b : reducer_->bucketInfos()) d.bucketSizes.push_back(b.bytes());
  d.unusedParameterSize = 0;
  d.unusedParameterNames.clear();
  for (size_t i : reducer_->unusedParameters()) {
    d.unusedParameterSize += static_cast<int64_t>(reducer_->parameters()[i].nbytes());
    d.unusedParameterNames.push_back(reducer_->parameterNames()[i]);
  }
  d.lastIteration = reducer_->lastIteration();
  d.lastBucketTimings = reducer_->lastBucketTimings();
  return d;
}

}  // namespace distlab::ddp
