#pragma once
// DDP statistics (PyTorch: DDPLoggingData, c10d::Logger, _get_ddp_logging_data).
//
// Construction data is filled once; runtime data is updated at each
// synchronising forward from the previous iteration, sampled as PyTorch samples
// it (iterations 1..10, then every 100th; kDDPRuntimeLoggingSampleRate) into
// the averages. Times are nanoseconds (Note [DDP timing] in ddp_stats.hpp).
//
// Logging (docs/pytorch-semantics.md, "DDP logging"): with TORCH_DISTRIBUTED_DEBUG >= INFO
// the construction data is logged at INFO ("[Rank r]: DDP Initialized with:
// ..."); with DETAIL every sampled iteration logs "[Rank r / w] Training
// <Module> unused_parameter_size=... Avg forward compute time: ...". What is
// printed also depends on TORCH_CPP_LOG_LEVEL (logging.hpp).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/ddp/ddp_stats.hpp"

namespace distlab::ddp {

inline constexpr int64_t kDDPRuntimeLoggingSampleRate = 100;

struct DDPLoggingData {
  // ---- construction --------------------------------------------------------------
  int rank = 0;
  int worldSize = 1;
  std::string moduleName;
  std::string backendName;
  std::string dtypes;  // "float" style list, comma separated
  bool broadcastBuffers = true;
  int64_t bucketCapBytes = 0;
  bool findUnusedParameters = false;
  bool gradientAsBucketView = false;
  bool staticGraph = false;
  bool skipAllReduceUnusedParams = false;
  bool isMultiDeviceModule = false;
  int64_t numParameterTensors = 0;
  int64_t totalParameterSizeBytes = 0;
  std::vector<int64_t> bucketSizes;  // bytes, current layout in bucket order
  std::string masterAddr = "N/A";
  std::string masterPort = "N/A";
  std::string torchDistributedDebug = "OFF";
  std::string commHook;              // "" when none
  // ---- runtime ---------------------------------------------------------------------
  int64_t iteration = 0;             // synchronising forwards so far
  bool canSetStaticGraph = true;
  int64_t unusedParameterSize = 0;   // bytes, last iteration
  std::vector<std::string> unusedParameterNames;
  bool hasRebuiltBuckets = false;
  std::vector<int64_t> rebuiltBucketSizes;
  std::vector<int64_t> rebuiltPerBucketSizeLimits;
  int64_t numIterationsStatsRecorded = 0;
  int64_t forwardComputeTime = 0;    // last sampled iteration
  int64_t backwardComputeTime = 0;
  int64_t backwardCommTime = 0;
  int64_t backwardComputeCommOverlapTime = 0;
  int64_t avgForwardComputeTime = 0;  // over sampled iterations
  int64_t avgBackwardComputeTime = 0;
  int64_t avgBackwardCommTime = 0;
  int64_t avgBackwardComputeCommOverlapTime = 0;
  // ---- distlab extensions (benchmarks) ------------------------------------------
  IterationTiming lastIteration;            // the latest completed iteration, unsampled
  std::vector<BucketTiming> lastBucketTimings;

  // PyTorch-style dictionary (strings_map + ints_map merged), keys as PyTorch.
  std::map<std::string, std::string> toMap() const;
};

// "DDP Initialized with:\nbroadcast_buffers: 1\n..." (§22.2 field list).
std::string formatInitLog(const DDPLoggingData& data);
// "[Rank r / w] Training M unused_parameter_size=...\n Avg forward compute time: ..." (§22.3).
std::string formatRuntimeLog(const DDPLoggingData& data);
// PyTorch's sampling rule for iteration n (1-based).
bool shouldSampleIteration(int64_t iteration);
// Adds one sampled iteration into the data's last and average fields.
void recordSample(DDPLoggingData& data, const IterationTiming& timing);

}  // namespace distlab::ddp
