#include "runtime/tensor/parallel.hpp"

#include <cblas.h>

#include <string>

#include "runtime/core/errors.hpp"

namespace distlab {

void setNumThreads(int threads) {
  if (threads < 1) {
    throw ValueError("setNumThreads: threads must be >= 1, got " + std::to_string(threads));
  }
  openblas_set_num_threads(threads);
}

int getNumThreads() { return openblas_get_num_threads(); }

}  // namespace distlab
