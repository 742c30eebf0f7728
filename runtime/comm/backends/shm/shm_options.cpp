#include "runtime/comm/backends/shm/shm_options.hpp"

#include <fmt/format.h>

#include "runtime/core/errors.hpp"

namespace distlab::comm::shm {
namespace {

uint64_t slotBytes(const std::string& key, const std::string& value) {
  const uint64_t bytes = parseOptionUInt(key, value, kMinSlotBytes, kMaxSlotOrChannelBytes);
  if (bytes % 4096 != 0) {
    throw ValueError(fmt::format("backend option {}='{}': give a multiple of 4096", key, value));
  }
  return bytes;
}

uint64_t channelBytes(const std::string& key, const std::string& value) {
  const uint64_t bytes = parseOptionUInt(key, value, 4096, kMaxSlotOrChannelBytes);
  if ((bytes & (bytes - 1)) != 0) {
    throw ValueError(
        fmt::format("backend option {}='{}': give a power of two (4096, 8192, ...)", key, value));
  }
  return bytes;
}

std::optional<AllreduceAlgo> allreduceAlgo(const std::string& key, const std::string& value) {
  switch (parseOptionChoice(key, value, {"auto", "direct", "rsag"})) {
    case 1: return AllreduceAlgo::kDirect;
    case 2: return AllreduceAlgo::kRsAg;
    default: return std::nullopt;
  }
}

SingleCopyMode singleCopyMode(const std::string& key, const std::string& value) {
  switch (parseOptionChoice(key, value, {"auto", "on", "off"})) {
    case 1: return SingleCopyMode::kOn;
    case 2: return SingleCopyMode::kOff;
    default: return SingleCopyMode::kAuto;
  }
}

uint64_t singleCopyMinBytes(const std::string& key, const std::string& value) {
  return parseOptionUInt(key, value, 0, 1ull << 62);
}

uint64_t eagerBytes(const std::string& key, const std::string& value) {
  return parseOptionUInt(key, value, 0, kEagerDataBytes);
}

}  // namespace

ShmOptions parseShmOptions(const BackendOptionMap& options) {
  ShmOptions o;
  o.segment.slotBytes = readOption(options, "shm.slot_bytes", o.segment.slotBytes, slotBytes);
  o.segment.channelBytes =
      readOption(options, "shm.channel_bytes", o.segment.channelBytes, channelBytes);
  o.forcedAllreduce =
      readOption(options, "shm.allreduce_algo", o.forcedAllreduce, allreduceAlgo);
  o.singleCopy = readOption(options, "shm.single_copy", o.singleCopy, singleCopyMode);
  o.singleCopyMinBytes =
      readOption(options, "shm.single_copy_min_bytes", o.singleCopyMinBytes, singleCopyMinBytes);
  o.eagerBytes = readOption(options, "shm.eager_bytes", o.eagerBytes, eagerBytes);
  return o;
}

std::vector<BackendOptionSpec> shmOptionSpecs() {
  auto spec = [](const char* key, const char* help) {
    return BackendOptionSpec{key, help, [key](const std::string& value) {
                               parseShmOptions({{key, value}});
                             }};
  };
  return {spec("shm.slot_bytes", "data slot per rank per parity (multiple of 4096)"),
          spec("shm.channel_bytes", "point-to-point ring per rank pair (power of two)"),
          spec("shm.allreduce_algo", "auto | direct | rsag"),
          spec("shm.single_copy", "auto | on | off"),
          spec("shm.single_copy_min_bytes", "smallest operation read in place (bytes)"),
          spec("shm.eager_bytes", "largest rooted operation taken one-sided (bytes, 0-65536)")};
}

}  // namespace distlab::comm::shm
