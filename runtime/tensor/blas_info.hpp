#pragma once
// Which BLAS kernels this process runs, for benchmark and demo headers.
//
// Note [OpenBLAS kernel family]
// OpenBLAS picks its kernels at load time from the CPU it recognises (or from
// OPENBLAS_CORETYPE). Debian's 0.3.21 falls back to the Sandybridge (AVX)
// kernels on CPUs it does not know; on an AVX-512 Xeon that made fp32 GEMM
// 1.66x slower than OPENBLAS_CORETYPE=SkylakeX (90 vs 149 GFLOP/s at 1024^3).
// Every figure a benchmark reports depends on this, so benchmarks and
// `distlab demo` print the family and say when the CPU supports a faster one.
#include <string>

namespace distlab {

struct BlasInfo {
  std::string config;      // openblas_get_config(): "OpenBLAS 0.3.21 DYNAMIC_ARCH ..."
  std::string coreName;    // openblas_get_corename(): "Sandybridge", "SkylakeX", ...
  std::string cpuModel;    // /proc/cpuinfo "model name" ("" when unreadable)
  std::string fasterCore;  // a family this CPU supports that is faster, or ""
};

BlasInfo blasInfo();

// "BLAS: OpenBLAS 0.3.21 ..., kernel family Haswell on AMD EPYC ..." plus, when
// fasterCore is set, "; this CPU supports the faster SkylakeX kernels: set
// OPENBLAS_CORETYPE=SkylakeX". One line, no newline.
std::string blasSummary();

}  // namespace distlab
