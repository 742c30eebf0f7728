#include "runtime/core/host_name.hpp"

#include <unistd.h>

namespace distlab {

std::string hostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown-host";
  return buf;
}

}  // namespace distlab
