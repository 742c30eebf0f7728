#pragma once
// DDPOptions: the constructor arguments of DistributedDataParallel, as plain
// data (scenario files fill it from TOML), with PyTorch's names and defaults.
//
//   PyTorch argument                 field                        default
//   bucket_cap_mb                    bucketCapMb                  unset = 25 MiB
//   broadcast_buffers                broadcastBuffers             true
//   init_sync                        initSync                     true
//   find_unused_parameters           findUnusedParameters         false
//   gradient_as_bucket_view          gradientAsBucketView         false
//   static_graph                     staticGraph                  false
//   skip_all_reduce_unused_params    skipAllReduceUnusedParams    false
//   delay_all_reduce_named_params    delayAllReduceNamedParams    {} (FQNs)
//   param_to_hook_all_reduce         paramToHookAllReduce         "" (an FQN)
//
// bucketCapMb: as in PyTorch, leaving it unset means 25 MiB AND a small first
// bucket of 1 MiB when buckets are rebuilt after the first iteration; setting it
// (even to 25) uses that cap for every bucket. Parameters are named by their
// fully qualified names in the wrapped module ("layers.0.weight") because the
// options must stay plain data; DistributedDataParallel resolves them.
#include <optional>
#include <string>
#include <vector>

namespace distlab::ddp {

struct DDPOptions {
  std::optional<double> bucketCapMb;  // MiB; nullopt: 25 MiB with a 1 MiB first bucket
  bool broadcastBuffers = true;
  bool initSync = true;
  bool findUnusedParameters = false;
  bool gradientAsBucketView = false;
  bool staticGraph = false;
  bool skipAllReduceUnusedParams = false;
  std::vector<std::string> delayAllReduceNamedParams;
  std::string paramToHookAllReduce;

  // Bytes per bucket (bucketCapMb * 2^20, default 26214400).
  int64_t bucketBytesCap() const;
  // The first bucket's cap used by the rebuild (1 MiB unless bucketCapMb is set).
  int64_t firstBucketBytesCap() const;
};

// Checks the options on their own (no module needed). Throws ValueError naming
// the field (PyTorch spelling) and the fix:
//   bucket_cap_mb must be a positive finite number;
//   param_to_hook_all_reduce and delay_all_reduce_named_params come together;
//   delay_all_reduce_named_params has no duplicates;
//   skip_all_reduce_unused_params needs find_unused_parameters=True.
void validate(const DDPOptions& options);

// "bucket_cap_mb=25 (default), broadcast_buffers=1, ..." for logs and errors.
std::string describe(const DDPOptions& options);

}  // namespace distlab::ddp
