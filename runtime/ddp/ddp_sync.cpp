// Construction-time verification and coalesced broadcasts of module state.
#include <fmt/format.h>

#include "runtime/autograd/grad_mode.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/ddp/distributed_data_parallel.hpp"

namespace distlab::ddp {
namespace {

// Every rank's copy of `local` (int64 1-D, same length everywhere).
std::vector<std::vector<int64_t>> allgatherInts(const comm::ProcessGroupPtr& group,
                                                const std::vector<int64_t>& local) {
  Tensor input = fromVector<int64_t>(local);
  std::vector<Tensor> outputs;
  for (int r = 0; r < group->size(); ++r) outputs.push_back(emptyLike(input));
  group->allgather(outputs, input)->wait();
  std::vector<std::vector<int64_t>> result;
  for (const Tensor& t : outputs) result.push_back(t.toVector<int64_t>());
  return result;
}

std::string who(int me, int rank) {
  return me == rank ? std::string("this process") : fmt::format("process {}", rank);
}

}  // namespace

void verifyParamsAcrossProcesses(const comm::ProcessGroupPtr& group,
                                 const std::vector<Tensor>& params) {
  const int me = group->rank();
  const auto n = static_cast<int64_t>(params.size());
  const auto counts = allgatherInts(group, {n});
  for (int r = 0; r < group->size(); ++r) {
    if (counts[r][0] != n) {
      throw Error(fmt::format(
          "DDP expects same model across all ranks, but Rank {} has {} params, while rank {} "
          "has inconsistent {} params.",
          me, n, r, counts[r][0]));
    }
  }
  if (n == 0) return;
  std::vector<int64_t> dims;
  for (const Tensor& p : params) dims.push_back(p.dim());
  const auto allDims = allgatherInts(group, dims);
  for (int r = 1; r < group->size(); ++r) {
    for (int64_t p = 0; p < n; ++p) {
      if (allDims[r][p] != allDims[0][p]) {
        throw Error(fmt::format(
            "[{}]: params[{}] in {} with {} dimensions appears not to match sizes of the same "
            "param in process 0 ({} dimensions).",
            me, p, who(me, r), allDims[r][p], allDims[0][p]));
      }
    }
  }
  std::vector<int64_t> meta;
  for (const Tensor& p : params) {
    meta.insert(meta.end(), p.sizes().begin(), p.sizes().end());
    meta.insert(meta.end(), p.strides().begin(), p.strides().end());
  }
  const auto allMeta = allgatherInts(group, meta);
  for (int r = 1; r < group->size(); ++r) {
    size_t pos = 0;
    for (int64_t p = 0; p < n; ++p) {
      const auto d = static_cast<size_t>(allDims[0][p]);
      Shape sizes(allMeta[r].begin() + pos, allMeta[r].begin() + pos + d);
      for (size_t k = 0; k < d; ++k) {
        if (allMeta[r][pos + k] != allMeta[0][pos + k]) {
          throw Error(fmt::format(
              "[{}]: params[{}] in {} with sizes {} appears not to match sizes of the same "
              "param in process 0.",
              me, p, who(me, r), shapeToString(sizes)));
        }
      }
      for (size_t k = d; k < 2 * d; ++k) {
        if (allMeta[r][pos + k] != allMeta[0][pos + k]) {
          throw Error(fmt::format(
              "params[{}] in {} with sizes {} appears not to match strides of the same param "
              "in process 0.",
              p, who(me, r), shapeToString(sizes)));
        }
      }
      pos += 2 * d;
    }
  }
}

void broadcastCoalesced(const comm::ProcessGroupPtr& group, const std::vector<Tensor>& tensors,
                        int64_t bucketBytes, int root) {
  if (group->size() == 1 || tensors.empty()) return;
  autograd::NoGradGuard noGrad;
  size_t begin = 0;
  while (begin < tensors.size()) {
    // A chunk: consecutive tensors of one dtype up to bucketBytes (at least one).
    const DType dtype = tensors[begin].dtype();
    size_t end = begin;
    int64_t bytes = 0;
    int64_t numel = 0;
    while (end < tensors.size() && tensors[end].dtype() == dtype &&
           (end == begin || bytes + static_cast<int64_t>(tensors[end].nbytes()) <= bucketBytes)) {
      bytes += static_cast<int64_t>(tensors[end].nbytes());
      numel += tensors[end].numel();
      ++end;
    }
    Tensor flat = empty({numel}, TensorOptions{dtype, tensors[begin].device()});
    int64_t offset = 0;
    for (size_t i = begin; i < end; ++i) {
      flat.narrow(0, offset, tensors[i].numel()).view(tensors[i].sizes()).copy_(tensors[i]);
      offset += tensors[i].numel();
    }
    comm::BroadcastOptions opts;
    opts.rootRank = root;
    group->broadcast(flat, opts)->wait();
    if (group->rank() != root) {
      offset = 0;
      for (size_t i = begin; i < end; ++i) {
        Tensor target = tensors[i];
        target.copy_(flat.narrow(0, offset, tensors[i].numel()).view(tensors[i].sizes()));
        offset += tensors[i].numel();
      }
    }
    begin = end;
  }
}

}  // namespace distlab::ddp
