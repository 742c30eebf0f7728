#pragma once
// RingQueue<T>: a FIFO in one growable circular buffer. Unlike std::deque,
// which allocates a block when its back block fills and frees it when its
// front block empties (every few pushes for large elements), a queue that
// stays short reuses its slots and never allocates once it has grown to its
// longest length (a progress thread's operations: Note [Per-operation cost]
// in runtime/comm/work.hpp).
//
// Contract: T default constructible and nothrow move assignable; front() and
// pop_front() need !empty(). Iteration order is FIFO order. Not thread-safe.
#include <cstddef>
#include <utility>
#include <vector>

namespace distlab {

template <typename T>
class RingQueue {
 public:
  RingQueue() = default;
  // Moves leave the source empty.
  RingQueue(RingQueue&& other) noexcept { *this = std::move(other); }
  RingQueue& operator=(RingQueue&& other) noexcept {
    slots_ = std::move(other.slots_);
    other.slots_.clear();
    head_ = std::exchange(other.head_, 0);
    size_ = std::exchange(other.size_, 0);
    return *this;
  }

  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  T& front() { return slots_[head_]; }
  // The i-th oldest element; i < size().
  T& operator[](size_t i) { return slots_[(head_ + i) & (slots_.size() - 1)]; }

  // The new back element, default constructed, for the caller to fill in
  // place (no temporary to move from).
  T& emplace_back() {
    if (size_ == slots_.size()) grow();
    ++size_;
    return (*this)[size_ - 1];
  }
  // Removes the oldest element (move what you need out of front() first).
  void pop_front() {
    slots_[head_] = T();  // free slots hold default values: nothing kept alive
    head_ = (head_ + 1) & (slots_.size() - 1);
    --size_;
  }

 private:
  void grow() {
    std::vector<T> bigger(slots_.empty() ? 8 : 2 * slots_.size());
    for (size_t i = 0; i < size_; ++i) bigger[i] = std::move((*this)[i]);
    slots_.swap(bigger);
    head_ = 0;
  }

  std::vector<T> slots_;  // a power of two of them (indices wrap by a mask); live from head_
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace distlab
