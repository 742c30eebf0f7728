#pragma once
// Note [Strided iteration]
// Every elementwise kernel walks N operands of one shape (inputs already
// broadcast to the output shape, so a broadcast dim has stride 0). The shape
// is first simplified: size-1 dims are dropped and adjacent dims merged where
// every operand is "contiguous across" them. What is left is an outer
// odometer over all but the innermost dim and a call of `inner(ptrs, strides,
// n)` per innermost row, with byte pointers and byte strides. Kernels
// specialise the inner row on its strides (all dense, one operand stride 0,
// general), so the common cases are tight loops the compiler vectorises and no
// per-element index arithmetic or indirect call happens.
#include <array>
#include <cstdint>
#include <vector>

#include "runtime/tensor/tensor.hpp"

namespace distlab::detail {

template <int N>
struct StridedLayout {
  std::vector<int64_t> sizes;                   // innermost last
  std::vector<std::array<int64_t, N>> strides;  // bytes, per dim, per operand
};

// Builds the simplified layout of N operands that all have `shape`.
template <int N>
StridedLayout<N> simplifyLayout(const Shape& shape, const std::array<const Tensor*, N>& ops) {
  StridedLayout<N> layout;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    std::array<int64_t, N> s;
    for (int k = 0; k < N; ++k) {
      s[k] = ops[k]->strides()[d] * static_cast<int64_t>(ops[k]->elementSize());
    }
    if (!layout.sizes.empty()) {
      auto& prev = layout.strides.back();
      bool mergeable = true;
      for (int k = 0; k < N; ++k) mergeable = mergeable && prev[k] == s[k] * shape[d];
      if (mergeable) {
        layout.sizes.back() *= shape[d];
        prev = s;
        continue;
      }
    }
    layout.sizes.push_back(shape[d]);
    layout.strides.push_back(s);
  }
  return layout;
}

// Runs inner(char* ptrs[N], const int64_t strides[N], int64_t n) over every
// innermost row. `ops[k]` supplies the base pointer of operand k.
template <int N, typename Inner>
void stridedLoop(const Shape& shape, const std::array<const Tensor*, N>& ops, Inner&& inner) {
  for (int64_t s : shape) {
    if (s == 0) return;
  }
  StridedLayout<N> layout = simplifyLayout<N>(shape, ops);
  std::array<char*, N> base;
  for (int k = 0; k < N; ++k) base[k] = static_cast<char*>(ops[k]->rawData());
  if (layout.sizes.empty()) {  // a single element
    std::array<int64_t, N> zero{};
    inner(base.data(), zero.data(), int64_t{1});
    return;
  }
  const int outerDims = static_cast<int>(layout.sizes.size()) - 1;
  const int64_t n = layout.sizes.back();
  const std::array<int64_t, N> innerStrides = layout.strides.back();
  std::vector<int64_t> counter(outerDims, 0);
  std::array<char*, N> ptrs = base;
  while (true) {
    inner(ptrs.data(), innerStrides.data(), n);
    int d = outerDims - 1;
    for (; d >= 0; --d) {
      for (int k = 0; k < N; ++k) ptrs[k] += layout.strides[d][k];
      if (++counter[d] < layout.sizes[d]) break;
      for (int k = 0; k < N; ++k) ptrs[k] -= layout.strides[d][k] * layout.sizes[d];
      counter[d] = 0;
    }
    if (d < 0) return;
  }
}

}  // namespace distlab::detail
