#include "emulator/workloads/layer_compute.hpp"

#include <chrono>
#include <thread>

#include "runtime/autograd/node.hpp"
#include "runtime/core/trace.hpp"

namespace distlab::emulator {

namespace {

void sleepAsCompute(double ms, const char* what) {
  trace::Span span(trace::Category::kCompute, what);
  std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(ms * 1000)));
}

// The layer's output through an identity whose backward sleeps: autograd
// reaches it right before the layer's own backward node.
Tensor withBackwardSleep(const Tensor& output, double backwardMs) {
  return autograd::recordFunction(
      "EmulatedComputeBackward", {output}, output,
      [backwardMs](const autograd::TensorList& grads, const std::vector<bool>&) {
        sleepAsCompute(backwardMs, "emulated backward");
        return autograd::TensorList{grads[0]};
      },
      /*savesTensors=*/false);
}

}  // namespace

int emulateLayerCompute(nn::Module& model, const LayerCompute& compute) {
  if (!compute.any()) return 0;
  int layers = 0;
  for (auto& [name, module] : model.namedModules()) {
    if (module->typeName() != "Linear") continue;
    ++layers;
    module->registerForwardHook(
        [compute](nn::Module&, const nn::TensorList&,
                  const nn::TensorList& outputs) -> std::optional<nn::TensorList> {
          if (compute.forwardMs > 0) sleepAsCompute(compute.forwardMs, "emulated forward");
          if (compute.backwardMs <= 0) return std::nullopt;
          nn::TensorList replaced;
          for (const Tensor& out : outputs) {
            replaced.push_back(withBackwardSleep(out, compute.backwardMs));
          }
          return replaced;
        });
  }
  return layers;
}

}  // namespace distlab::emulator
