#include "runtime/comm/tensor_meta_list.hpp"

namespace distlab::comm {

TensorMetaList::TensorMetaList(std::initializer_list<std::pair<Shape, DType>> entries) {
  for (const auto& [shape, dtype] : entries) push(shape, dtype);
}

void TensorMetaList::push(std::span<const int64_t> shape, DType dtype) {
  for (int64_t d : shape) dims_.push_back(d);
  ends_.push_back(static_cast<uint32_t>(dims_.size()));
  dtypes_.push_back(dtype);
}

std::span<const int64_t> TensorMetaList::shape(size_t i) const {
  const size_t begin = i == 0 ? 0 : ends_[i - 1];
  return dims_.span().subspan(begin, ends_[i] - begin);
}

int64_t TensorMetaList::numel(size_t i) const {
  int64_t n = 1;
  for (int64_t d : shape(i)) n *= d;
  return n;
}

std::vector<Shape> TensorMetaList::shapes() const {
  std::vector<Shape> out;
  out.reserve(size());
  for (size_t i = 0; i < size(); ++i) {
    const auto s = shape(i);
    out.emplace_back(s.begin(), s.end());
  }
  return out;
}

std::vector<DType> TensorMetaList::dtypes() const { return {dtypes_.begin(), dtypes_.end()}; }

}  // namespace distlab::comm
