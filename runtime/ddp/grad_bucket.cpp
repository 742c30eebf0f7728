#include "runtime/ddp/grad_bucket.hpp"

namespace distlab::ddp {

GradBucket::GradBucket(size_t index, size_t bucketCount, Tensor buffer,
                       std::vector<int64_t> offsets, std::vector<int64_t> lengths,
                       std::vector<Shape> sizes, std::vector<Tensor> parameters,
                       comm::ProcessGroupPtr group)
    : index_(index),
      bucketCount_(bucketCount),
      buffer_(std::move(buffer)),
      offsets_(std::move(offsets)),
      lengths_(std::move(lengths)),
      sizes_(std::move(sizes)),
      parameters_(std::move(parameters)),
      group_(std::move(group)) {}

std::vector<Tensor> GradBucket::gradients() const {
  std::vector<Tensor> out;
  out.reserve(offsets_.size());
  for (size_t i = 0; i < offsets_.size(); ++i) {
    out.push_back(buffer_.narrow(0, offsets_[i], lengths_[i]).view(sizes_[i]));
  }
  return out;
}

void GradBucket::setBuffer(const Tensor& buffer) {
  if (!buffer.defined() || buffer.dim() != 1 || buffer.numel() != buffer_.numel()) {
    throw ValueError(fmt::format(
        "GradBucket::setBuffer: bucket {} needs a 1-D tensor of {} elements, got {}", index_,
        buffer_.numel(), buffer.defined() ? shapeToString(buffer.sizes()) : "an undefined tensor"));
  }
  buffer_ = buffer;
}

comm::ProcessGroupPtr hookGroup(const HookState& state, const GradBucket& bucket,
                                std::string_view hookName) {
  auto group = hookStateAs<comm::ProcessGroup>(state, hookName, "comm::ProcessGroup");
  return group ? group : bucket.processGroup();
}

}  // namespace distlab::ddp
