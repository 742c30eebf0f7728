#pragma once
// InlineVector<T, N>: a growable sequence of trivially copyable values that
// keeps its first N elements inside the object and moves to the heap only
// when it grows past N. For small per-operation records that are built and
// dropped at a high rate (a collective's tensor shapes), where a std::vector
// would cost an allocation and a free each time.
//
// Contract: append-only (push_back, clear); elements are read through data()
// / operator[] / iteration; copies and moves are deep and keep the values.
#include <array>
#include <cstddef>
#include <span>
#include <type_traits>
#include <vector>

namespace distlab {

template <typename T, size_t N>
class InlineVector {
  static_assert(std::is_trivially_copyable_v<T>, "InlineVector holds plain values");
  static_assert(N > 0, "InlineVector needs inline room for at least one element");

 public:
  void push_back(T value) {
    if (heap_.empty() && size_ < N) {
      inline_[size_++] = value;
      return;
    }
    // The first spill copies the inline part; from then on the heap holds all.
    if (heap_.empty()) heap_.assign(inline_.begin(), inline_.begin() + size_);
    heap_.push_back(value);
    ++size_;
  }
  void clear() {
    heap_.clear();
    size_ = 0;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T* data() const { return heap_.empty() ? inline_.data() : heap_.data(); }
  const T& operator[](size_t i) const { return data()[i]; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  std::span<const T> span() const { return {data(), size_}; }

 private:
  std::array<T, N> inline_{};
  std::vector<T> heap_;  // empty while the elements fit inline
  size_t size_ = 0;
};

}  // namespace distlab
