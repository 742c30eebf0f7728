// Native Gloo algorithms (see gloo_backend.hpp for which operation uses which).
#include <fmt/format.h>

#include <cstring>

#include <gloo/allgather.h>
#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/gather.h>
#include <gloo/reduce.h>
#include <gloo/scatter.h>

#include "runtime/comm/backends/gloo/gloo_algorithms.hpp"
#include "runtime/comm/backends/gloo/gloo_dtype.hpp"
#include "runtime/comm/reduce_kernels.hpp"

namespace distlab::comm::gloo_backend {
namespace {

// Gloo wants a valid pointer even for empty blocks.
uint8_t gDummy[8];
uint8_t* bytePtr(const void* p) {
  return p != nullptr ? static_cast<uint8_t*>(const_cast<void*>(p)) : gDummy;
}

}  // namespace

Milliseconds GlooCall::remaining() const {
  Milliseconds left = deadline.remaining();
  return left.count() > 0 ? left : Milliseconds(1);
}

void glooBroadcast(const GlooCall& call, void* data, size_t bytes, int root) {
  if (bytes == 0) return;
  ::gloo::BroadcastOptions o(call.context);
  o.setOutput<uint8_t>(bytePtr(data), bytes);
  o.setRoot(root);
  o.setTag(call.tag);
  o.setTimeout(call.remaining());
  ::gloo::broadcast(o);
}

// Runs gloo::allreduce on `count` elements of `dtype` with distlab's kernel for `op`.
static void allreduceRaw(const GlooCall& call, void* data, size_t count, DType dtype,
                         ReduceOp op) {
  withCarrier(elementSize(dtype), [&](auto carrier) {
    using T = decltype(carrier);
    ::gloo::AllreduceOptions o(call.context);
    o.setOutput<T>(static_cast<T*>(data), count);
    o.setReduceFunction(reduceFunction(dtype, op));
    o.setTag(call.tag);
    o.setTimeout(call.remaining());
    ::gloo::allreduce(o);
  });
}

void glooAllreduce(const GlooCall& call, void* data, size_t count, DType dtype, ReduceOp op) {
  if (count == 0) return;
  const double avg = 1.0 / call.size();
  if (isHalf(dtype)) {
    std::vector<float> wide = widen(data, count, dtype);
    if (op.kind == ReduceOp::kPremulSum) scaleInPlace(wide.data(), count, DType::kFloat32, op.scalar);
    allreduceRaw(call, wide.data(), count, DType::kFloat32, op);
    if (op.kind == ReduceOp::kAvg) scaleInPlace(wide.data(), count, DType::kFloat32, avg);
    narrow(wide, data, dtype);
    return;
  }
  if (op.kind == ReduceOp::kPremulSum) premulCopy(data, data, count, dtype, op.scalar);
  allreduceRaw(call, data, count, dtype, op);
  if (op.kind == ReduceOp::kAvg) scaleInPlace(data, count, dtype, avg);
}

void glooReduce(const GlooCall& call, void* data, size_t count, DType dtype, ReduceOp op,
                int root) {
  if (count == 0) return;
  // Gloo uses the buffer as scratch on every rank; non-roots keep their input.
  const bool half = isHalf(dtype);
  const DType work = half ? DType::kFloat32 : dtype;
  std::vector<uint8_t> scratch(count * elementSize(work));
  if (half) {
    std::vector<float> wide = widen(data, count, dtype);
    std::memcpy(scratch.data(), wide.data(), scratch.size());
  } else {
    std::memcpy(scratch.data(), data, scratch.size());
  }
  if (op.kind == ReduceOp::kPremulSum) scaleInPlace(scratch.data(), count, work, op.scalar);
  withCarrier(elementSize(work), [&](auto carrier) {
    using T = decltype(carrier);
    ::gloo::ReduceOptions o(call.context);
    o.setOutput<T>(reinterpret_cast<T*>(scratch.data()), count);
    o.setRoot(root);
    o.setReduceFunction(reduceFunction(work, op));
    o.setTag(call.tag);
    o.setTimeout(call.remaining());
    ::gloo::reduce(o);
  });
  if (call.rank() != root) return;
  if (op.kind == ReduceOp::kAvg) scaleInPlace(scratch.data(), count, work, 1.0 / call.size());
  if (half) {
    narrow(reinterpret_cast<const float*>(scratch.data()), count, data, dtype);
  } else {
    std::memcpy(data, scratch.data(), scratch.size());
  }
}

void glooAllgather(const GlooCall& call, const void* in, size_t bytes, void* out) {
  if (bytes == 0) return;
  ::gloo::AllgatherOptions o(call.context);
  o.setInput<uint8_t>(bytePtr(in), bytes);
  o.setOutput<uint8_t>(bytePtr(out), bytes * call.size());
  o.setTag(call.tag);
  o.setTimeout(call.remaining());
  ::gloo::allgather(o);
}

void glooAllgatherv(const GlooCall& call, const void* in, void* out,
                    const std::vector<size_t>& bytesPerRank) {
  size_t total = 0;
  for (size_t b : bytesPerRank) total += b;
  if (total == 0) return;
  ::gloo::AllgathervOptions o(call.context);
  o.setInput<uint8_t>(bytePtr(in), bytesPerRank[call.rank()]);
  o.setOutput<uint8_t>(bytePtr(out), bytesPerRank);
  o.setTag(call.tag);
  o.setTimeout(call.remaining());
  ::gloo::allgatherv(o);
}

void glooGather(const GlooCall& call, const void* in, size_t bytes, void* out, int root) {
  if (bytes == 0) return;
  ::gloo::GatherOptions o(call.context);
  o.setInput<uint8_t>(bytePtr(in), bytes);
  if (call.rank() == root) o.setOutput<uint8_t>(bytePtr(out), bytes * call.size());
  o.setRoot(root);
  o.setTag(call.tag);
  o.setTimeout(call.remaining());
  ::gloo::gather(o);
}

void glooScatter(const GlooCall& call, const std::vector<const void*>& ins, void* out,
                 size_t bytes, int root) {
  if (bytes == 0) return;
  ::gloo::ScatterOptions o(call.context);
  if (call.rank() == root) {
    std::vector<uint8_t*> ptrs;
    for (const void* p : ins) ptrs.push_back(bytePtr(p));
    o.setInputs<uint8_t>(ptrs, bytes);
  }
  o.setOutput<uint8_t>(bytePtr(out), bytes);
  o.setRoot(root);
  o.setTag(call.tag);
  o.setTimeout(call.remaining());
  ::gloo::scatter(o);
}

void glooAlltoallv(const GlooCall& call, const void* in, const std::vector<size_t>& inBytes,
                   void* out, const std::vector<size_t>& outBytes) {
  size_t total = 0;
  for (size_t b : inBytes) total += b;
  for (size_t b : outBytes) total += b;
  if (total == 0) return;
  ::gloo::AlltoallvOptions o(call.context);
  o.setInput<uint8_t>(bytePtr(in), std::vector<int64_t>(inBytes.begin(), inBytes.end()));
  o.setOutput<uint8_t>(bytePtr(out), std::vector<int64_t>(outBytes.begin(), outBytes.end()));
  o.setTag(call.tag);
  o.setTimeout(call.remaining());
  ::gloo::alltoallv(o);
}

void glooAlltoall(const GlooCall& call, const void* in, void* out, size_t blockBytes) {
  if (blockBytes == 0) return;
  ::gloo::AlltoallOptions o(call.context);
  o.setInput<uint8_t>(bytePtr(in), blockBytes * call.size());
  o.setOutput<uint8_t>(bytePtr(out), blockBytes * call.size());
  o.setTag(call.tag);
  o.setTimeout(call.remaining());
  ::gloo::alltoall(o);
}

void glooBarrier(const GlooCall& call) {
  ::gloo::BarrierOptions o(call.context);
  o.setTag(call.tag);
  o.setTimeout(call.remaining());
  ::gloo::barrier(o);
}

}  // namespace distlab::comm::gloo_backend
