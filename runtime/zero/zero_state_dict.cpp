// ZeroRedundancyOptimizer state: consolidation on one rank, the global state
// dict, loading this rank's part.
//
// Note [ZeRO state on the wire]
// consolidateStateDict sends each rank's local state with two broadcasts from
// that rank (its byte length as int64, then the bytes as uint8), so every rank
// takes part in the same collectives in the same order; only `to` decodes.
// The bytes: entry count, then per parameter its global position, step and
// buffers (name, dtype, shape, raw contents), all integers as int64.
#include <cstring>

#include <fmt/format.h>

#include "runtime/core/errors.hpp"
#include "runtime/zero/zero_redundancy_optimizer.hpp"

namespace distlab::zero {
namespace {

class Writer {
 public:
  void i64(int64_t v) { raw(&v, sizeof v); }
  void raw(const void* data, size_t n) {
    const auto* b = static_cast<const uint8_t*>(data);
    bytes_.insert(bytes_.end(), b, b + n);
  }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

class Reader {
 public:
  explicit Reader(const Tensor& t) : data_(t.data<uint8_t>()), size_(static_cast<size_t>(t.numel())) {}
  int64_t i64() {
    int64_t v = 0;
    raw(&v, sizeof v);
    return v;
  }
  void raw(void* out, size_t n) {
    if (pos_ + n > size_) throw Error("ZeroRedundancyOptimizer: truncated state on the wire");
    std::memcpy(out, data_ + pos_, n);
    pos_ += n;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

void encodeEntry(Writer& w, int64_t position, const optim::ParamState& state) {
  w.i64(position);
  w.i64(state.step);
  w.i64(static_cast<int64_t>(state.buffers.size()));
  for (const auto& [name, buffer] : state.buffers) {
    w.i64(static_cast<int64_t>(name.size()));
    w.raw(name.data(), name.size());
    const Tensor t = buffer.to(Device::cpu()).contiguous();
    w.i64(static_cast<int64_t>(t.dtype()));
    w.i64(static_cast<int64_t>(t.sizes().size()));
    for (int64_t s : t.sizes()) w.i64(s);
    w.i64(static_cast<int64_t>(t.nbytes()));
    w.raw(t.rawData(), t.nbytes());
  }
}

void decodeInto(Reader& r, std::map<int64_t, optim::ParamState>& out) {
  const int64_t entries = r.i64();
  for (int64_t e = 0; e < entries; ++e) {
    const int64_t position = r.i64();
    optim::ParamState& state = out[position];
    state.step = r.i64();
    const int64_t buffers = r.i64();
    for (int64_t b = 0; b < buffers; ++b) {
      std::string name(static_cast<size_t>(r.i64()), '\0');
      r.raw(name.data(), name.size());
      const auto dtype = static_cast<DType>(r.i64());
      Shape shape(static_cast<size_t>(r.i64()));
      for (auto& s : shape) s = r.i64();
      Tensor t = empty(shape, TensorOptions{dtype});
      const auto nbytes = static_cast<size_t>(r.i64());
      if (nbytes != t.nbytes()) throw Error("ZeroRedundancyOptimizer: corrupt state on the wire");
      r.raw(t.rawData(), nbytes);
      state.buffers[name] = t;
    }
  }
}

}  // namespace

void ZeroRedundancyOptimizer::consolidateStateDict(int to) {
  checkOverlapInitialized("consolidateStateDict");
  if (to < 0 || to >= group_->size()) {
    throw ValueError(fmt::format(
        "ZeroRedundancyOptimizer::consolidateStateDict: to = {} is not a rank of the group "
        "(0..{})", to, group_->size() - 1));
  }
  const std::vector<size_t> localToGlobal = localPositions();
  Writer w;
  const optim::OptimizerStateDict mine =
      local_ ? local_->stateDict() : optim::OptimizerStateDict{};
  w.i64(static_cast<int64_t>(mine.state.size()));
  for (const auto& [local, state] : mine.state) {
    encodeEntry(w, static_cast<int64_t>(localToGlobal.at(static_cast<size_t>(local))), state);
  }
  optim::OptimizerStateDict global;
  for (int r = 0; r < group_->size(); ++r) {
    comm::BroadcastOptions o;
    o.rootRank = r;
    Tensor length = fromVector<int64_t>({static_cast<int64_t>(w.bytes().size())});
    group_->broadcast(length, o)->wait(group_->timeout());
    Tensor bytes = r == group_->rank() ? fromVector<uint8_t>(w.bytes())
                                       : empty({length.item<int64_t>()}, TensorOptions{DType::kUInt8});
    group_->broadcast(bytes, o)->wait(group_->timeout());
    if (group_->rank() != to) continue;
    Reader reader(bytes);
    decodeInto(reader, global.state);
  }
  if (group_->rank() != to) {
    consolidated_.reset();
    return;
  }
  int64_t position = 0;
  for (const auto& g : groups_) {
    optim::OptimizerStateDict::Group out;
    out.options = localOptionsOr(g.options);
    for (size_t k = 0; k < g.params.size(); ++k) out.params.push_back(position++);
    global.paramGroups.push_back(std::move(out));
  }
  consolidated_ = std::move(global);
}

optim::OptimizerStateDict ZeroRedundancyOptimizer::stateDict() const {
  checkOverlapInitialized("stateDict");
  if (!consolidated_) {
    throw Error(
        "Optimizer state has not been consolidated on this rank. Please call "
        "`consolidate_state_dict(to=...)` on all ranks beforehand if you meant to save the "
        "global state.");
  }
  return *consolidated_;
}

void ZeroRedundancyOptimizer::loadStateDict(const optim::OptimizerStateDict& sd) {
  checkOverlapInitialized("loadStateDict");
  if (sd.paramGroups.size() != groups_.size()) {
    throw ValueError(fmt::format(
        "ZeroRedundancyOptimizer::loadStateDict: the state dict has {} parameter groups, the "
        "optimizer {}", sd.paramGroups.size(), groups_.size()));
  }
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (sd.paramGroups[g].params.size() != groups_[g].params.size()) {
      throw ValueError(fmt::format(
          "ZeroRedundancyOptimizer::loadStateDict: group {} has {} parameters in the state "
          "dict and {} in the optimizer", g, sd.paramGroups[g].params.size(),
          groups_[g].params.size()));
    }
  }
  for (size_t g = 0; g < groups_.size(); ++g) groups_[g].options = sd.paramGroups[g].options;
  if (local_) local_->loadStateDict(localStateDictFrom(sd));
}

optim::OptimizerStateDict ZeroRedundancyOptimizer::localStateDictFrom(
    const optim::OptimizerStateDict& global) const {
  optim::OptimizerStateDict local;
  const std::vector<size_t> localToGlobal = localPositions();
  int64_t next = 0;
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (localGroupOf_[g] < 0) continue;
    optim::OptimizerStateDict::Group out;
    out.options = global.paramGroups[g].options;
    const size_t count = local_->paramGroups()[static_cast<size_t>(localGroupOf_[g])].params.size();
    for (size_t k = 0; k < count; ++k) out.params.push_back(next++);
    local.paramGroups.push_back(std::move(out));
  }
  for (size_t li = 0; li < localToGlobal.size(); ++li) {
    auto it = global.state.find(static_cast<int64_t>(localToGlobal[li]));
    if (it == global.state.end()) continue;
    optim::ParamState copy;
    copy.step = it->second.step;
    for (const auto& [name, t] : it->second.buffers) copy.buffers[name] = t.to(joinDevice()).clone();
    local.state[static_cast<int64_t>(li)] = std::move(copy);
  }
  return local;
}

std::vector<size_t> ZeroRedundancyOptimizer::localPositions() const {
  std::vector<size_t> out;
  size_t start = 0;
  for (size_t g = 0; g < groups_.size(); ++g) {
    for (size_t k = 0; k < groups_[g].params.size(); ++k) {
      if (localGroupOf_[g] >= 0 && owner_[start + k] == group_->rank()) out.push_back(start + k);
    }
    start += groups_[g].params.size();
  }
  return out;
}

optim::Options ZeroRedundancyOptimizer::localOptionsOr(const optim::Options& options) const {
  // The complete options (the kind's defaults included) of an equivalent local group.
  optim::Options out = local_ ? local_->paramGroups().front().options : optim::Options{};
  for (const auto& [k, v] : defaults_) out[k] = v;
  for (const auto& [k, v] : options) out[k] = v;
  return out;
}

}  // namespace distlab::zero
