#include "emulator/faults/fault_spec.hpp"

namespace distlab::emulator {

const std::vector<std::string> kFaultKinds = {
    "hang", "crash", "straggler", "mismatch", "skip_collective", "extra_collective",
    "skip_backward", "unused_param", "uneven_data", "bit_flip", "store_death", "slow_store"};

const std::vector<std::string> kPointToPointMismatches = {"shape", "dtype"};

}  // namespace distlab::emulator
