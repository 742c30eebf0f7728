#pragma once
// PowerSGD gradient compression (Vogels et al., NeurIPS 2019; PyTorch:
// ddp_comm_hooks.powerSGD_hook). State, fields and defaults as PyTorch's
// PowerSGDState (docs/pytorch-semantics.md, "PowerSGD"):
//
//   matrixApproximationRank      1      rank r of the low-rank factors P, Q
//   startPowerSGDIter         1000      vanilla allreduce before this iteration;
//                                        must be > 1 with error feedback or warm start
//                                        (buckets are rebuilt at iteration 1)
//   minCompressionRate           2      compress an n x m gradient only if
//                                        (n + m) * r * rate < n * m
//   useErrorFeedback          true      add last iteration's compression error
//   warmStart                 true      reuse P, Q across iterations
//   orthogonalizationEpsilon     0      added to column norms (Gram-Schmidt)
//   randomSeed                   0      seeds the Q initialisation (same on all ranks)
//   compressionStatsLoggingFrequency 10000
//   batchTensorsWithSameShape false     compress same-shaped tensors as one batch
//
// Per compressed gradient M (viewed n x m): P = M Q, allreduce P, orthogonalise
// P, Q = M^T P, allreduce Q (divided by the world size), M ~ P Q^T. The rest
// (vectors, small matrices) is allreduced uncompressed as one flat tensor.
// batchedPowerSgdHook compresses the whole bucket as one zero-padded square
// matrix instead (faster, usually less accurate unless r = 1).
//
// Neither hook waits: each returns at once with a Future that callbacks
// complete (Note [PowerSGD future chain] in powersgd_hook.cpp); the bucket is
// updated in place. Every rank issues the collectives in hook order (bucket by
// bucket: uncompressed, P, Q). Orthogonalisation is Gram-Schmidt for every rank
// (PyTorch switches to QR above rank 2).
// Not thread-safe: one state per DDP instance; the hooks are called on one
// thread (the Future callbacks only touch the tensors of their own bucket).
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "runtime/comm/process_group.hpp"
#include "runtime/ddp/grad_bucket.hpp"
#include "runtime/tensor/generator.hpp"

namespace distlab::ddp {

struct PowerSGDOptions {
  int64_t matrixApproximationRank = 1;
  int64_t startPowerSGDIter = 1000;
  double minCompressionRate = 2.0;
  bool useErrorFeedback = true;
  bool warmStart = true;
  double orthogonalizationEpsilon = 0.0;
  uint64_t randomSeed = 0;
  int64_t compressionStatsLoggingFrequency = 10000;
  bool batchTensorsWithSameShape = false;
};

// Everything but the process group (PyTorch __getstate__); tensors are copies.
struct PowerSGDStateDict {
  PowerSGDOptions options;
  int64_t iter = 0;
  int64_t totalNumelBeforeCompression = 0;
  int64_t totalNumelAfterCompression = 0;
  int64_t nextStatsReport = 0;
  int64_t rngDraws = 0;  // seeds drawn so far from the state's generator
  std::map<size_t, Tensor> errorDict;
  std::map<size_t, Tensor> pMemoryDict;
  std::map<size_t, Tensor> qMemoryDict;
};

class PowerSGDState {
 public:
  // `group` null: the DDP instance's group (bucket.processGroup()). Throws
  // ValueError on bad options (start iteration, rank, rate, frequency).
  explicit PowerSGDState(comm::ProcessGroupPtr group, PowerSGDOptions options = {});

  const PowerSGDOptions& options() const { return options_; }
  const comm::ProcessGroupPtr& processGroup() const { return group_; }
  int64_t iter() const { return iter_; }
  // (compression rate = before / after (0 when nothing compressed), numel before, after).
  std::tuple<double, int64_t, int64_t> compressionStats() const;

  // PyTorch __getstate__ / __setstate__: the group is not saved; restoring
  // takes the group to use (null: the DDP instance's).
  PowerSGDStateDict stateDict() const;
  static std::shared_ptr<PowerSGDState> fromStateDict(const PowerSGDStateDict& dict,
                                                      comm::ProcessGroupPtr group);

  // ---- used by the hooks -------------------------------------------------------------
  std::map<size_t, Tensor> errorDict;
  std::map<size_t, Tensor> pMemoryDict;
  std::map<size_t, Tensor> qMemoryDict;
  int64_t totalNumelBeforeCompression = 0;
  int64_t totalNumelAfterCompression = 0;
  // The Future completed once the last hooked bucket issued all its collectives
  // (the next bucket issues after it); null before the first compressed bucket.
  FuturePtr issueTail;
  // Counts an iteration when the last bucket was processed.
  void maybeIncreaseIter(const GradBucket& bucket);
  // Logs "Compression stats: ..." every compressionStatsLoggingFrequency iterations.
  void reportCompressionStats(const GradBucket& bucket);
  // A fresh seed for a Q initialisation (identical sequence on every rank).
  uint64_t nextSeed();

 private:
  comm::ProcessGroupPtr group_;
  PowerSGDOptions options_;
  int64_t iter_ = 0;
  int64_t nextStatsReport_ = 0;
  Generator rng_;
  int64_t rngDraws_ = 0;
};

// State: std::shared_ptr<PowerSGDState> (required).
FuturePtr powerSgdHook(const HookState& state, GradBucket& bucket);
FuturePtr batchedPowerSgdHook(const HookState& state, GradBucket& bucket);

namespace detail {
// PyTorch _should_compress: (compress?, uncompressed numel, compressed numel).
std::tuple<bool, int64_t, int64_t> shouldCompress(int64_t rows, int64_t cols, int64_t rank,
                                                  double minCompressionRate);
// Gram-Schmidt on each matrix of a contiguous [batch, n, r] tensor, in place.
void orthogonalize(Tensor& matrices, double epsilon);
}  // namespace detail

}  // namespace distlab::ddp
