#pragma once
// Argument checks shared by ProcessGroup (before numbering an operation) and
// backends that want to re-check. Each throws ValueError naming the operation,
// the argument and the expected vs found values.
#include <string_view>
#include <vector>

#include "runtime/tensor/tensor.hpp"

namespace distlab::comm::detail {

// Defined, contiguous, CPU or CUDA.
void checkTensor(const Tensor& t, std::string_view op, std::string_view arg);
void checkTensors(const std::vector<Tensor>& ts, std::string_view op, std::string_view arg);
void checkSameDtype(const Tensor& a, const Tensor& b, std::string_view op);
void checkListSize(const std::vector<Tensor>& ts, size_t expected, std::string_view op,
                   std::string_view arg);
void checkRank(int rank, int size, std::string_view op, std::string_view arg);
// all_to_all_single: fills empty splits with equal division of dim 0 and checks
// that each list has `size` entries summing to dim 0.
void resolveSplits(std::vector<int64_t>& splits, const Tensor& t, int size, std::string_view arg);
// Elements in one dim-0 row of t (1 for 1-D; numel / size(0)).
int64_t rowNumel(const Tensor& t);

}  // namespace distlab::comm::detail
