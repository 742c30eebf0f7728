#include "runtime/ddp/ddp_logging.hpp"

#include <fmt/format.h>

namespace distlab::ddp {
namespace {

std::string joinInts(const std::vector<int64_t>& values) {
  std::string out;
  for (int64_t v : values) out += (out.empty() ? "" : ", ") + std::to_string(v);
  return out;
}

}  // namespace

bool shouldSampleIteration(int64_t iteration) {
  return iteration > 0 && (iteration <= 10 || iteration % kDDPRuntimeLoggingSampleRate == 0);
}

void recordSample(DDPLoggingData& d, const IterationTiming& t) {
  d.forwardComputeTime = t.forwardComputeNs();
  d.backwardComputeTime = t.backwardComputeNs();
  d.backwardCommTime = t.backwardCommNs();
  d.backwardComputeCommOverlapTime = t.overlapNs();
  const int64_t n = ++d.numIterationsStatsRecorded;
  auto avg = [n](int64_t previous, int64_t value) { return (previous * (n - 1) + value) / n; };
  d.avgForwardComputeTime = avg(d.avgForwardComputeTime, d.forwardComputeTime);
  d.avgBackwardComputeTime = avg(d.avgBackwardComputeTime, d.backwardComputeTime);
  d.avgBackwardCommTime = avg(d.avgBackwardCommTime, d.backwardCommTime);
  d.avgBackwardComputeCommOverlapTime =
      avg(d.avgBackwardComputeCommOverlapTime, d.backwardComputeCommOverlapTime);
}

std::map<std::string, std::string> DDPLoggingData::toMap() const {
  auto b = [](bool v) { return std::string(v ? "1" : "0"); };
  auto i = [](int64_t v) { return std::to_string(v); };
  return {
      {"rank", i(rank)},
      {"world_size", i(worldSize)},
      {"module_name", moduleName},
      {"backend_name", backendName},
      {"dtypes", dtypes},
      {"broadcast_buffers", b(broadcastBuffers)},
      {"bucket_cap_bytes", i(bucketCapBytes)},
      {"find_unused_parameters", b(findUnusedParameters)},
      {"gradient_as_bucket_view", b(gradientAsBucketView)},
      {"static_graph", b(staticGraph)},
      {"is_multi_device_module", b(isMultiDeviceModule)},
      {"num_parameter_tensors", i(numParameterTensors)},
      {"total_parameter_size_bytes", i(totalParameterSizeBytes)},
      {"bucket_sizes", joinInts(bucketSizes)},
      {"master_addr", masterAddr},
      {"master_port", masterPort},
      {"torch_distributed_debug", torchDistributedDebug},
      {"comm_hook", commHook},
      {"iteration", i(iteration)},
      {"can_set_static_graph", b(canSetStaticGraph)},
      {"unused_parameter_size", i(unusedParameterSize)},
      {"has_rebuilt_buckets", b(hasRebuiltBuckets)},
      {"rebuilt_bucket_sizes", joinInts(rebuiltBucketSizes)},
      {"rebuilt_per_bucket_size_limits", joinInts(rebuiltPerBucketSizeLimits)},
      {"forward_compute_time", i(forwardComputeTime)},
      {"backward_compute_time", i(backwardComputeTime)},
      {"backward_comm_time", i(backwardCommTime)},
      {"backward_compute_comm_overlap_time", i(backwardComputeCommOverlapTime)},
      {"avg_forward_compute_time", i(avgForwardComputeTime)},
      {"avg_backward_compute_time", i(avgBackwardComputeTime)},
      {"avg_backward_comm_time", i(avgBackwardCommTime)},
      {"avg_backward_compute_comm_overlap_time", i(avgBackwardComputeCommOverlapTime)},
  };
}

std::string formatInitLog(const DDPLoggingData& d) {
  return fmt::format(
      "[Rank {}]: DDP Initialized with:\nbroadcast_buffers: {}\nbucket_cap_bytes: {}\n"
      "find_unused_parameters: {}\ngradient_as_bucket_view: {}\nis_multi_device_module: {}\n"
      "iteration: {}\nnum_parameter_tensors: {}\noutput_device: N/A\nrank: {}\n"
      "total_parameter_size_bytes: {}\nworld_size: {}\nbackend_name: {}\nbucket_sizes: {}\n"
      "cuda_visible_devices: N/A\ndevice_ids: N/A\ndtypes: {}\nmaster_addr: {}\n"
      "master_port: {}\nmodule_name: {}\nstatic_graph: {}\ntorch_distributed_debug: {}",
      d.rank, int(d.broadcastBuffers), d.bucketCapBytes, int(d.findUnusedParameters),
      int(d.gradientAsBucketView), int(d.isMultiDeviceModule), d.iteration,
      d.numParameterTensors, d.rank, d.totalParameterSizeBytes, d.worldSize, d.backendName,
      joinInts(d.bucketSizes), d.dtypes, d.masterAddr, d.masterPort, d.moduleName,
      int(d.staticGraph), d.torchDistributedDebug);
}

std::string formatRuntimeLog(const DDPLoggingData& d) {
  return fmt::format(
      "[Rank {} / {}] Training {} unused_parameter_size={}\n Avg forward compute time: {}\n Avg "
      "backward compute time: {}\nAvg backward comm. time: {}\n Avg backward comm/comp overlap "
      "time: {}",
      d.rank, d.worldSize, d.moduleName, d.unusedParameterSize, d.avgForwardComputeTime,
      d.avgBackwardComputeTime, d.avgBackwardCommTime, d.avgBackwardComputeCommOverlapTime);
}

}  // namespace distlab::ddp
