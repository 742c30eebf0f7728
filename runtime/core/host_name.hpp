#pragma once
// This machine's host name, as log lines, liveness records and flight-recorder
// dumps name it.
#include <string>

namespace distlab {

// gethostname(), or "unknown-host" when the system cannot say.
std::string hostName();

}  // namespace distlab
