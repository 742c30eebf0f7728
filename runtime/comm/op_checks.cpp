#include "runtime/comm/op_checks.hpp"

#include <fmt/format.h>

#include <numeric>

#include "runtime/core/errors.hpp"

namespace distlab::comm::detail {

namespace {
bool passesChecks(const Tensor& t) { return t.defined() && t.isContiguous(); }
}  // namespace

void checkTensor(const Tensor& t, std::string_view op, std::string_view arg) {
  if (passesChecks(t)) return;
  if (!t.defined()) throw ValueError(fmt::format("{}: {} is an undefined tensor", op, arg));
  if (!t.isContiguous()) {
    throw ValueError(fmt::format("{}: {} must be contiguous (sizes {}, strides {}); call "
                                 ".contiguous() first",
                                 op, arg, shapeToString(t.sizes()), shapeToString(t.strides())));
  }
}

void checkTensors(const std::vector<Tensor>& ts, std::string_view op, std::string_view arg) {
  for (size_t i = 0; i < ts.size(); ++i) {
    // The element's name is formatted only for the message: a list operation
    // checks every call, and a string per element cost more than the check.
    if (!passesChecks(ts[i])) {
      checkTensor(ts[i], op, fmt::format("{}[{}]", arg, i));
    }
  }
}

void checkSameDtype(const Tensor& a, const Tensor& b, std::string_view op) {
  if (a.dtype() != b.dtype()) {
    throw ValueError(fmt::format("{}: tensors must have the same dtype (found {} and {})", op,
                                 dtypeName(a.dtype()), dtypeName(b.dtype())));
  }
}

void checkListSize(const std::vector<Tensor>& ts, size_t expected, std::string_view op,
                   std::string_view arg) {
  if (ts.size() != expected) {
    throw ValueError(fmt::format("{}: {} must have {} tensors (one per rank), found {}", op, arg,
                                 expected, ts.size()));
  }
}

void checkRank(int rank, int size, std::string_view op, std::string_view arg) {
  if (rank < 0 || rank >= size) {
    throw ValueError(
        fmt::format("{}: {} {} is out of range for a group of size {}", op, arg, rank, size));
  }
}

int64_t rowNumel(const Tensor& t) {
  if (t.dim() == 0) return 1;
  return t.size(0) == 0 ? shapeNumel(Shape(t.sizes().begin() + 1, t.sizes().end()))
                        : t.numel() / t.size(0);
}

void resolveSplits(std::vector<int64_t>& splits, const Tensor& t, int size, std::string_view arg) {
  const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
  if (splits.empty()) {
    if (rows % size != 0) {
      throw ValueError(fmt::format("all_to_all_single: {} is empty, so dim 0 of the tensor ({}) "
                                   "must divide equally by the world size {}",
                                   arg, rows, size));
    }
    splits.assign(size, rows / size);
    return;
  }
  if (static_cast<int>(splits.size()) != size) {
    throw ValueError(fmt::format("all_to_all_single: {} has {} entries, expected {} (one per rank)",
                                 arg, splits.size(), size));
  }
  int64_t total = 0;
  for (int64_t s : splits) {
    if (s < 0) throw ValueError(fmt::format("all_to_all_single: {} has a negative entry", arg));
    total += s;
  }
  if (total != rows) {
    throw ValueError(fmt::format("all_to_all_single: {} sum to {}, but dim 0 of the tensor is {}",
                                 arg, total, rows));
  }
}

}  // namespace distlab::comm::detail
