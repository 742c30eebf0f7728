#include "runtime/ddp/ddp_options.hpp"

#include <cmath>
#include <set>

#include <fmt/format.h>

#include "runtime/core/errors.hpp"
#include "runtime/ddp/bucket_assignment.hpp"

namespace distlab::ddp {

int64_t DDPOptions::bucketBytesCap() const {
  if (!bucketCapMb) return kDefaultBucketBytesCap;
  return static_cast<int64_t>(*bucketCapMb * 1024.0 * 1024.0);
}

int64_t DDPOptions::firstBucketBytesCap() const {
  return bucketCapMb ? bucketBytesCap() : kDefaultFirstBucketBytes;
}

void validate(const DDPOptions& options) {
  if (options.bucketCapMb) {
    const double mb = *options.bucketCapMb;
    if (!std::isfinite(mb) || mb <= 0.0 || options.bucketBytesCap() < 1) {
      throw ValueError(fmt::format(
          "DDPOptions: bucket_cap_mb={} is invalid; give a positive size in MiB (at least one "
          "byte), or leave it unset for the default of 25",
          mb));
    }
  }
  const bool hasDelayed = !options.delayAllReduceNamedParams.empty();
  const bool hasHook = !options.paramToHookAllReduce.empty();
  if (hasDelayed != hasHook) {
    throw ValueError(
        hasDelayed
            ? "DDPOptions: delay_all_reduce_named_params is set but param_to_hook_all_reduce is "
              "empty; name the parameter whose gradient triggers the delayed all-reduce"
            : "DDPOptions: param_to_hook_all_reduce is set but delay_all_reduce_named_params is "
              "empty; list the parameters whose all-reduce is delayed, or drop the hook");
  }
  std::set<std::string> seen;
  for (const auto& name : options.delayAllReduceNamedParams) {
    if (!seen.insert(name).second) {
      throw ValueError(fmt::format(
          "DDPOptions: delay_all_reduce_named_params lists '{}' twice; list each parameter once",
          name));
    }
  }
  if (options.skipAllReduceUnusedParams && !options.findUnusedParameters) {
    throw ValueError(
        "DDPOptions: skip_all_reduce_unused_params=True needs find_unused_parameters=True "
        "(unused parameters are only known when DDP searches for them)");
  }
}

std::string describe(const DDPOptions& o) {
  std::string delayed;
  for (const auto& n : o.delayAllReduceNamedParams) delayed += (delayed.empty() ? "" : ",") + n;
  return fmt::format(
      "bucket_cap_mb={}, broadcast_buffers={}, init_sync={}, find_unused_parameters={}, "
      "gradient_as_bucket_view={}, static_graph={}, skip_all_reduce_unused_params={}, "
      "delay_all_reduce_named_params=[{}], param_to_hook_all_reduce={}",
      o.bucketCapMb ? fmt::format("{}", *o.bucketCapMb) : std::string("25 (default)"),
      int(o.broadcastBuffers), int(o.initSync), int(o.findUnusedParameters),
      int(o.gradientAsBucketView), int(o.staticGraph), int(o.skipAllReduceUnusedParams), delayed,
      o.paramToHookAllReduce.empty() ? "None" : o.paramToHookAllReduce);
}

}  // namespace distlab::ddp
