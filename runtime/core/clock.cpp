#include "runtime/core/clock.hpp"

namespace distlab {

int64_t wallClockNowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace distlab
