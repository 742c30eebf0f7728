#pragma once
// Kernels per (operation, device) and the default device for factories.
//
// Note [Device dispatch]
// A tensor's device picks its allocator (allocator.hpp) and its kernels. Every
// operation validates its arguments and computes its result's shape and dtype
// once, device-independently; then:
//   - on CPU it runs its built-in kernel inline (the CPU path pays one
//     predictable branch, nothing more);
//   - on any other device it allocates the result with that device's
//     allocator and calls the kernel registered for (operation, device type),
//     or the device's fallback kernel, or throws
//     "relu is not implemented for device cuda:0".
// The meta device registers a fallback that does nothing: its allocator gives
// no memory, so every operation runs shape-only (meta/meta_device.cpp). CUDA
// registers its kernels from cuda/ when built with CUDA. A new device adds a
// folder that registers an allocator and kernels, not an `if` per operation.
//
// Operands of one operation must share a device, except 0-dim CPU tensors,
// which are moved to the other operand's device (as in PyTorch).
//
// Thread-safety: registration and lookup are safe from any thread.
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "runtime/tensor/tensor.hpp"

namespace distlab {

// What a registered kernel receives: the results, already allocated on the
// device with their final shape and dtype, the operands (on the same device,
// broadcast to the result's shape where the operation broadcasts), and the
// operation's numeric parameters (alpha, exponent, bounds) and integer ones
// (dims), in the order the operation documents at its registration site.
struct KernelArgs {
  const char* op = "";
  std::span<const Tensor> outputs;
  std::span<const Tensor> inputs;
  std::span<const double> scalars;
  std::span<const int64_t> ints;
};
using KernelFn = void (*)(const KernelArgs& args);

// Registers `fn` for `op` ("relu", "add", "mm", ...) on `type`; replaces an
// earlier registration.
void registerKernel(std::string_view op, DeviceType type, KernelFn fn);
// Runs for any operation `type` has no kernel for (meta: shape-only no-op).
void registerFallback(DeviceType type, KernelFn fn);
// The kernel for (op, type), else the fallback, else null.
KernelFn findKernel(std::string_view op, DeviceType type);
// Runs the kernel for `device`; throws Error "<op> is not implemented for
// device <device>" when there is none.
void runKernel(Device device, const KernelArgs& args);
// runKernel with brace lists (detail drivers use this).
void runKernel(Device device, const char* op, std::initializer_list<Tensor> outputs,
               std::initializer_list<Tensor> inputs, std::initializer_list<double> scalars = {},
               std::initializer_list<int64_t> ints = {});

// Factories (empty, zeros, randn, fromVector, ...) asked for the CPU create
// on the innermost guard's device instead while a guard lives on this thread
// (PyTorch: `with torch.device("meta"):`). Build a model on meta with it:
//   { DefaultDeviceGuard g(Device::meta()); model = std::make_shared<Gpt>(o, gen); }
class DefaultDeviceGuard {
 public:
  explicit DefaultDeviceGuard(Device device);
  ~DefaultDeviceGuard();
  DefaultDeviceGuard(const DefaultDeviceGuard&) = delete;
  DefaultDeviceGuard& operator=(const DefaultDeviceGuard&) = delete;

 private:
  Device previous_;
  bool hadPrevious_;
};
// The device factories use for a request of `requested`.
Device factoryDevice(Device requested);

namespace detail {
// Registers the built-in devices (CPU, meta, and CUDA when built) once.
void ensureBuiltinDevices();
// Throws PyTorch's "Expected all tensors to be on the same device, but found
// at least two devices, cpu and meta!" unless a and b may be combined (same
// device, or one of them a 0-dim CPU tensor).
void checkSameDevice(const char* op, const Tensor& a, const Tensor& b);
// The device an operation on a and b runs on (the non-CPU one for a 0-dim CPU
// operand).
Device commonDevice(const Tensor& a, const Tensor& b);
// Throws for data access on a meta tensor ("<op>: a meta tensor has no data").
[[noreturn]] void throwNoData(const char* op, const Tensor& t);
}  // namespace detail

}  // namespace distlab
