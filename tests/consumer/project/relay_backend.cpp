// The consumer project's own collective backend, "relay": it hands every
// operation to distlab's shm backend (a ForwardingBackend sees each one as an
// Operation), registered by name as PyTorch's Backend.register_backend would.
// With CONSUMER_BREAK_MAX=1 in the environment it deliberately runs every
// MAX all_reduce as a SUM: distlab's collective suite must then fail, naming
// the seed that replays the failure.
#include <cstdlib>
#include <cstring>
#include <memory>

#include "runtime/comm/backend_registry.hpp"
#include "runtime/comm/forwarding_backend.hpp"

namespace {

using namespace distlab;

class RelayBackend : public comm::ForwardingBackend {
 public:
  RelayBackend(comm::BackendPtr inner, bool breakMax)
      : ForwardingBackend(std::move(inner)), breakMax_(breakMax) {}
  std::string name() const override { return "relay"; }

 protected:
  comm::WorkPtr intercept(const comm::Operation& op) override {
    const bool maxAllreduce =
        op.type == comm::OpType::kAllreduce && op.reduceOp.kind == comm::ReduceOp::kMax;
    if (!breakMax_ || !maxAllreduce) return forward(op);
    comm::Operation broken = op;
    broken.reduceOp = comm::ReduceOp::kSum;  // the deliberate bug
    return forward(broken);
  }

 private:
  bool breakMax_;
};

comm::BackendPtr makeRelay(const comm::BackendContext& ctx) {
  const char* flag = std::getenv("CONSUMER_BREAK_MAX");
  const bool breakMax = flag != nullptr && std::strcmp(flag, "1") == 0;
  return std::make_shared<RelayBackend>(comm::lookupBackend("shm").factory(ctx), breakMax);
}

const bool kRelayRegistered = [] {
  comm::BackendInfo info;
  info.name = "relay";
  info.factory = makeRelay;
  comm::registerBackend(std::move(info));
  return true;
}();

}  // namespace
