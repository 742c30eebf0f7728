#pragma once
// The shm backend's options (Note [Backend options] in backend_options.hpp),
// parsed in one place: the backend's constructor and the registry's up-front
// check both go through parseShmOptions, so what the check accepts is exactly
// what the backend runs with.
//   shm.slot_bytes             data slot per rank per parity; a multiple of 4096 in
//                              [4096, 1 GiB] (default 262144). Every step moves at
//                              most one slot, so 0 would never finish a step.
//   shm.channel_bytes          point-to-point ring per ordered rank pair; a power
//                              of two in [4096, 1 GiB] (default 65536)
//   shm.allreduce_algo         auto | direct | rsag (overrides the selector table)
//   shm.single_copy            auto | on | off (Note [shm single copy])
//   shm.single_copy_min_bytes  smallest operation read in place, [0, 2^62] bytes
//   shm.eager_bytes            largest broadcast, reduce, gather or scatter (per
//                              rank; a scatter's whole input) taken one-sided,
//                              [0, 65536] (default 65536; 0: never). Note [Eager
//                              rooted operations] in shm_eager.hpp
#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/comm/backend_options.hpp"
#include "runtime/comm/backends/shm/shm_algorithm_selector.hpp"
#include "runtime/comm/backends/shm/shm_segment.hpp"
#include "runtime/comm/backends/shm/shm_single_copy.hpp"

namespace distlab::comm::shm {

inline constexpr uint64_t kMinSlotBytes = 4096;
inline constexpr uint64_t kMaxSlotOrChannelBytes = 1ull << 30;

struct ShmOptions {
  SegmentOptions segment;
  std::optional<AllreduceAlgo> forcedAllreduce;  // nullopt: the selector table
  SingleCopyMode singleCopy = SingleCopyMode::kAuto;
  uint64_t singleCopyMinBytes = defaultSingleCopyMinBytes();
  uint64_t eagerBytes = kEagerDataBytes;
};

// Reads the "shm.*" keys of `options` (others are ignored); throws ValueError
// naming the key, the value and the valid values.
ShmOptions parseShmOptions(const BackendOptionMap& options);

// The keys above with their checks, for the backend's registration.
std::vector<BackendOptionSpec> shmOptionSpecs();

}  // namespace distlab::comm::shm
