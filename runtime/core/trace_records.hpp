// One thread's trace events, kept outside the malloc heap (internal to
// runtime/core/trace.cpp; tests/core/trace_records_test.cpp).
//
// Note [Trace records outside the heap]
// A traced step records a hundred or more events whose names and args live
// until the trace is written. As heap strings they are small, long-lived
// blocks, and glibc carves them out of the holes that freed tensors leave in
// the heap (the CPU allocator keeps freed memory there, Note [Keeping freed
// tensor memory]): the next step's multi-MiB buffers no longer fit those
// holes, so the heap grows by about one step's buffers every step. Measured
// on a traced FSDP run of the reference MLP (world 2): resident memory grew
// ~25 MiB per step, two thirds of the CPU time went to the kernel faulting
// fresh pages in, and a step took ~145 ms against ~25 ms untraced. The
// records are therefore appended, names and args copied in, to blocks
// mapped with mmap, never to the heap; events() rebuilds Event values when
// the trace is read (once, at the end).
//
// Not thread-safe: the owner (trace.cpp's per-thread buffer) locks around
// every call.
#pragma once

#include <cstddef>
#include <vector>

#include "runtime/core/trace.hpp"

namespace distlab::trace::detail {

class RecordStore {
 public:
  // Each block is this large, or larger for one record that does not fit.
  static constexpr size_t kBlockBytes = size_t{1} << 20;

  RecordStore() = default;
  ~RecordStore();
  RecordStore(const RecordStore&) = delete;
  RecordStore& operator=(const RecordStore&) = delete;

  // Appends a copy of `e`. Throws std::bad_alloc when no block can be mapped.
  void append(const Event& e);
  // Copies of the records, in the order they were appended.
  std::vector<Event> events() const;
  size_t size() const { return count_; }
  // Forgets every record; the first block stays mapped for reuse.
  void clear();

 private:
  struct Block {
    char* base = nullptr;
    size_t capacity = 0;
    size_t used = 0;
  };
  char* reserve(size_t bytes);

  std::vector<Block> blocks_;  // one heap allocation per MiB of records, rarely grown
  size_t count_ = 0;
};

}  // namespace distlab::trace::detail
