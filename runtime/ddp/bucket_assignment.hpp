#pragma once
// Gradient bucket assignment (PyTorch: compute_bucket_assignment_by_size).
//
// Note [Bucket assignment]
// Tensors are walked in the given order and grouped per (dtype, device) key.
// Each key has its own position in `sizeLimits`: a bucket closes as soon as its
// byte size reaches the current limit (so it may overshoot by one tensor), and
// the key then moves on to the next limit, staying on the last one. With limits
// {1 MiB, 25 MiB} the first bucket of each key is ~1 MiB, the others ~25 MiB.
// Tensors that expect a sparse gradient get a bucket of their own (no limit).
// Leftover partial buckets are appended in the order their key was first seen
// (PyTorch walks a hash map there; with one dtype/device both agree).
// When `tensorIndices` is empty the buckets are sorted by the smallest tensor
// index they hold (the order parameters are used in forward); DDP then reverses
// that list to approximate gradient-ready order. When `tensorIndices` is given
// (the gradient-ready order recorded in the first iteration, used by the
// rebuild) the tensors are already in ready order and no sorting happens.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "runtime/tensor/device.hpp"
#include "runtime/tensor/dtype.hpp"

namespace distlab::ddp {

// PyTorch: _DEFAULT_FIRST_BUCKET_BYTES and the default bucket_cap_mb (25 MiB).
inline constexpr int64_t kDefaultFirstBucketBytes = 1024 * 1024;
inline constexpr int64_t kDefaultBucketBytesCap = 25 * 1024 * 1024;
inline constexpr int64_t kNoSizeLimit = std::numeric_limits<int64_t>::max();

// What the assignment needs to know about one tensor.
struct TensorSpec {
  int64_t numel = 0;
  DType dtype = DType::kFloat32;
  Device device = Device::cpu();
  int64_t bytes() const { return numel * static_cast<int64_t>(elementSize(dtype)); }
};

struct BucketAssignment {
  std::vector<std::vector<size_t>> buckets;  // tensor indices per bucket
  std::vector<int64_t> sizeLimits;           // the limit each bucket was filled against
};

// See Note [Bucket assignment]. `expectSparseGradient` is empty or one entry per
// tensor index; `tensorIndices` is empty or one entry per tensor (the index the
// tensor at that position stands for). Throws ValueError on an empty limit list,
// a non-positive limit, or a size mismatch of the optional lists.
BucketAssignment computeBucketAssignmentBySize(const std::vector<TensorSpec>& tensors,
                                               const std::vector<int64_t>& sizeLimits,
                                               const std::vector<bool>& expectSparseGradient = {},
                                               const std::vector<size_t>& tensorIndices = {});

}  // namespace distlab::ddp
