// Uses the installed headers and libraries the way an outside project would.
#include <cstdio>

#include "distlab/config.hpp"
#include "runtime/core/check.hpp"
#include "runtime/core/errors.hpp"

int main() {
  try {
    DL_CHECK_EQ(1, 2, "expected failure");
  } catch (const distlab::Error&) {
    std::printf("distlab consumer ok (version %s)\n", DISTLAB_VERSION);
    return 0;
  }
  return 1;
}
