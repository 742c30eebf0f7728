#include "runtime/fsdp/fsdp_memory.hpp"

#include "runtime/optim/optimizer.hpp"

namespace distlab::fsdp {

size_t optimizerStateBytes(const optim::Optimizer& optimizer) {
  size_t bytes = 0;
  for (const auto& group : optimizer.paramGroups()) {
    for (const auto& p : group.params) {
      if (const optim::ParamState* s = optimizer.findState(p)) {
        for (const auto& [name, buffer] : s->buffers) bytes += buffer.nbytes();
      }
    }
  }
  return bytes;
}

}  // namespace distlab::fsdp
