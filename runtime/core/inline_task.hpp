#pragma once
// InlineTask<Capacity>: a move-only `void()` callable that keeps a callable of
// up to Capacity bytes inside the object and puts a larger one on the heap.
// For tasks queued at a high rate (a progress thread's operations): a
// std::function keeps only 16 bytes inline, so every queued collective --
// whose closure holds its Work, tensors and options -- cost an allocation
// and a free (Note [Per-operation cost] in runtime/comm/work.hpp).
//
// Contract: constructed from any callable invocable as `void()` and move
// constructible; calling an empty task is undefined (check with bool). Moves
// leave the source empty. Not thread-safe (like std::function).
#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace distlab {

template <size_t Capacity>
class InlineTask {
 public:
  // Whether a callable of type Fn is kept inline (no allocation).
  template <typename Fn>
  static constexpr bool kFitsInline =
      sizeof(Fn) <= Capacity && alignof(Fn) <= alignof(std::max_align_t) &&
      std::is_nothrow_move_constructible_v<Fn>;

  InlineTask() = default;
  template <typename F, typename Fn = std::decay_t<F>,
            typename = std::enable_if_t<!std::is_same_v<Fn, InlineTask> &&
                                        std::is_invocable_r_v<void, Fn&>>>
  InlineTask(F&& fn) {  // NOLINT(google-explicit-constructor): like std::function
    if constexpr (kFitsInline<Fn>) {
      ::new (static_cast<void*>(buffer_)) Fn(std::forward<F>(fn));
      ops_ = &kInlineOps<Fn>;
    } else {
      ::new (static_cast<void*>(buffer_)) Fn*(new Fn(std::forward<F>(fn)));
      ops_ = &kHeapOps<Fn>;
    }
  }
  InlineTask(InlineTask&& other) noexcept { takeFrom(other); }
  InlineTask& operator=(InlineTask&& other) noexcept {
    if (this != &other) {
      reset();
      takeFrom(other);
    }
    return *this;
  }
  InlineTask(const InlineTask&) = delete;
  InlineTask& operator=(const InlineTask&) = delete;
  ~InlineTask() { reset(); }

  explicit operator bool() const { return ops_ != nullptr; }
  void operator()() { ops_->call(buffer_); }

 private:
  // What the stored callable's type knows; one static table per type.
  struct Ops {
    void (*call)(void* storage);
    void (*moveTo)(void* from, void* to) noexcept;  // constructs at `to`, destroys `from`
    void (*destroy)(void* storage) noexcept;
  };
  template <typename Fn>
  static constexpr Ops kInlineOps = {
      [](void* s) { (*static_cast<Fn*>(s))(); },
      [](void* from, void* to) noexcept {
        ::new (to) Fn(std::move(*static_cast<Fn*>(from)));
        static_cast<Fn*>(from)->~Fn();
      },
      [](void* s) noexcept { static_cast<Fn*>(s)->~Fn(); }};
  template <typename Fn>
  static constexpr Ops kHeapOps = {
      [](void* s) { (**static_cast<Fn**>(s))(); },
      [](void* from, void* to) noexcept { ::new (to) Fn*(*static_cast<Fn**>(from)); },
      [](void* s) noexcept { delete *static_cast<Fn**>(s); }};

  void takeFrom(InlineTask& other) noexcept {
    if (other.ops_ == nullptr) return;
    other.ops_->moveTo(other.buffer_, buffer_);
    ops_ = std::exchange(other.ops_, nullptr);
  }
  void reset() noexcept {
    if (ops_ != nullptr) std::exchange(ops_, nullptr)->destroy(buffer_);
  }

  static_assert(Capacity >= sizeof(void*), "InlineTask needs room for a pointer");
  const Ops* ops_ = nullptr;
  alignas(std::max_align_t) unsigned char buffer_[Capacity];
};

}  // namespace distlab
