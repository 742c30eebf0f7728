#pragma once
// `params_match_reference`: rank 0 checks, step by step, that the engine
// trains exactly like one process that sees every rank's batch.
//
// Note [Checking an engine against the single-process reference]
// Comparing final parameters after an independent reference run is
// ill-conditioned for Adam/AdamW: a gradient element that is mathematically
// ~0 is float32 rounding noise whose sign depends on summation order, and Adam
// turns it into a step of ~lr (observed: 9e-5 on an Intel Xeon with other
// OpenBLAS kernels, tolerance 1e-5). So the check compares the well-conditioned
// quantity the engine is responsible for — the synchronised gradient — at the
// engine's own parameters, at every synchronising step:
//   1. rank 0 copies the engine's current parameters into a reference model and
//      recomputes each rank q's local gradient g_q of this step (same code,
//      shapes, data and parameters as on rank q, so the same bits), accumulating
//      them per rank over no_sync steps like AccumulateGrad does (acc_q += g_q);
//   2. at a synchronising step, with x_q = acc_q / n (n = ranks), the engine's
//      gradient must lie within an a-posteriori rounding bound of sum_q x_q,
//      element by element:
//        |engine - sum_q x_q| <= 1.01 * ((n+1) u_c + (n+1) u) * sum_q |x_q|
//                                + (n+1) (s_c + s)
//      u = 2^-24 (float32 unit roundoff), u_c the unit roundoff of the dtype the
//      gradient is communicated in (float32, or 2^-11 / 2^-8 for the fp16 /
//      bf16 compression hooks), s, s_c half their smallest subnormal spacing
//      (absolute error of underflow). The engine's sum of n terms in any order
//      plus its division (and compression casts) is within (n+1) u_c sum|x_q|
//      of the exact sum (Higham, summation error gamma_{n-1} plus one rounding
//      per term); the reference's own sum within (n+1) u sum|x_q|; 1.01 covers
//      the 1/(1 - n u) factors of gamma.
//   3. the parameters the optimizer then produces must be unchanged (bitwise)
//      when the next step starts: an engine that touches parameters outside the
//      optimizer is caught there.
// The optimizer itself is local and identical on both sides, so 2 and 3 imply
// the whole trajectory matches. Faults that change the computation on purpose
// (unused_param, skip_backward, bit_flip) make the check fail, as they should.
#include <memory>
#include <string>
#include <vector>

#include "emulator/workloads/workload_spec.hpp"
#include "runtime/nn/module.hpp"

namespace distlab::emulator {

struct ReferenceVerdict {
  bool checked = false;   // at least one synchronising step was compared
  double worstRatio = 0;  // max over elements and steps of |deviation| / bound
  bool withinBound = true;
  std::string detail;     // the worst element (or the first parameter change)
};

class ReferenceChecker {
 public:
  // `ranks`: how many ranks' batches make one global step (1 for local
  // engines), of a world of `worldSize` (whose sampler shares the data).
  // `training` must outlive the checker. The reference model lives on
  // `device`, the engine's, so each rank's local gradient is recomputed with
  // the engine's kernels (the same bits).
  ReferenceChecker(const TrainingWorkload& training, int worldSize, int ranks,
                   Device device = Device::cpu());

  // After the engine's backward of `step`, before the optimizer: recompute and
  // accumulate every rank's local gradient at `engineParams`; when `synced`,
  // compare the engine's gradients and reset the accumulators.
  void afterBackward(int step, bool synced, const std::vector<Tensor>& engineParams);
  // Right after the optimizer step: remember the parameters it produced.
  void afterOptimizerStep(const std::vector<Tensor>& engineParams);

  const ReferenceVerdict& verdict() const { return verdict_; }

 private:
  void checkParametersUnchanged(int step, const std::vector<Tensor>& engineParams);
  void compareSynced(int step, const std::vector<Tensor>& engineParams);

  const TrainingWorkload& training_;
  int worldSize_;
  int ranks_;
  Device device_;
  std::shared_ptr<nn::Module> model_;
  std::vector<std::string> names_;
  std::vector<std::vector<Tensor>> accumulated_;  // [rank][param], float32
  std::vector<Tensor> afterStep_;                 // parameters the optimizer produced
  double commUnitRoundoff_;
  double commHalfSubnormal_;
  bool parameterChanged_ = false;
  ReferenceVerdict verdict_;
};

}  // namespace distlab::emulator
