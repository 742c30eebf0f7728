#include "runtime/tensor/dispatch.hpp"

#include <array>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "runtime/core/errors.hpp"
#include "runtime/tensor/detail/device_registration.hpp"

namespace distlab {
namespace {

using KernelRow = std::array<KernelFn, kNumDeviceTypes>;

struct Registry {
  std::shared_mutex mutex;
  std::unordered_map<std::string, KernelRow> kernels;  // GUARDED_BY(mutex)
  KernelRow fallbacks{};                               // GUARDED_BY(mutex)
};

Registry& registry() {
  static Registry r;
  return r;
}

thread_local std::optional<Device> tlsDefaultDevice;

}  // namespace

void registerKernel(std::string_view op, DeviceType type, KernelFn fn) {
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  r.kernels[std::string(op)][static_cast<size_t>(type)] = fn;
}

void registerFallback(DeviceType type, KernelFn fn) {
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  r.fallbacks[static_cast<size_t>(type)] = fn;
}

KernelFn findKernel(std::string_view op, DeviceType type) {
  detail::ensureBuiltinDevices();
  Registry& r = registry();
  std::shared_lock lock(r.mutex);
  const auto it = r.kernels.find(std::string(op));
  if (it != r.kernels.end() && it->second[static_cast<size_t>(type)] != nullptr) {
    return it->second[static_cast<size_t>(type)];
  }
  return r.fallbacks[static_cast<size_t>(type)];
}

void runKernel(Device device, const KernelArgs& args) {
  const KernelFn fn = findKernel(args.op, device.type);
  if (fn == nullptr) {
    throw Error(std::string(args.op) + " is not implemented for device " + device.str());
  }
  fn(args);
}

void runKernel(Device device, const char* op, std::initializer_list<Tensor> outputs,
               std::initializer_list<Tensor> inputs, std::initializer_list<double> scalars,
               std::initializer_list<int64_t> ints) {
  KernelArgs args;
  args.op = op;
  args.outputs = std::span<const Tensor>(outputs.begin(), outputs.size());
  args.inputs = std::span<const Tensor>(inputs.begin(), inputs.size());
  args.scalars = std::span<const double>(scalars.begin(), scalars.size());
  args.ints = std::span<const int64_t>(ints.begin(), ints.size());
  runKernel(device, args);
}

DefaultDeviceGuard::DefaultDeviceGuard(Device device)
    : previous_(tlsDefaultDevice.value_or(Device::cpu())),
      hadPrevious_(tlsDefaultDevice.has_value()) {
  tlsDefaultDevice = device;
}

DefaultDeviceGuard::~DefaultDeviceGuard() {
  if (hadPrevious_) {
    tlsDefaultDevice = previous_;
  } else {
    tlsDefaultDevice.reset();
  }
}

Device factoryDevice(Device requested) {
  return requested.isCpu() && tlsDefaultDevice ? *tlsDefaultDevice : requested;
}

namespace detail {

void ensureBuiltinDevices() {
  static const bool registered = [] {
    registerCpuDevice();
    registerMetaDevice();
#if DISTLAB_HAVE_CUDA
    registerCudaDevice();
#endif
    return true;
  }();
  (void)registered;
}

namespace {
bool cpuScalar(const Tensor& t) { return t.device().isCpu() && t.dim() == 0; }
}  // namespace

void checkSameDevice(const char* op, const Tensor& a, const Tensor& b) {
  const Device da = a.device();
  const Device db = b.device();
  if (da == db || cpuScalar(a) || cpuScalar(b)) return;
  throw Error(std::string(op) +
              ": Expected all tensors to be on the same device, but found at least two "
              "devices, " + da.str() + " and " + db.str() + "!");
}

Device commonDevice(const Tensor& a, const Tensor& b) {
  return a.device().isCpu() && a.dim() == 0 ? b.device() : a.device();
}

void throwNoData(const char* op, const Tensor& t) {
  throw Error(std::string(op) + ": a tensor on device " + t.device().str() +
              " has no data to read (meta tensors carry shapes only; materialise with "
              "toEmpty(device) and initialise first)");
}

}  // namespace detail
}  // namespace distlab
