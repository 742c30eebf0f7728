#pragma once
// cuBLAS, loaded on first use.
//
// Note [cuBLAS loaded on first use]
// Linking cuBLAS puts libcublasLt in every process: its static initialisers
// dirty ~84 MB of its .bss/.lbss at load, in a process that never touches a
// GPU (measured: a waiting scenario rank held 96 MB of private dirty memory,
// 84 MB of it there). Ranks of an emulated CPU cluster are many and small, so
// cuBLAS is opened with dlopen the first time a CUDA matmul runs, and only the
// four entry points distlab calls are looked up. Nothing else of CUDA's math
// libraries is linked.
//
// Thread-safety: cublas() may be called from any thread; the library is
// opened once.
#include <cublas_v2.h>

namespace distlab::cuda {

struct CublasLibrary {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasSetStream_v2) setStream = nullptr;
  decltype(&cublasSgemmStridedBatched) sgemmStridedBatched = nullptr;
  decltype(&cublasDgemmStridedBatched) dgemmStridedBatched = nullptr;
};

// Opens libcublas.so.<the major version distlab was built against> on the
// first call. Throws Error naming the library and what is missing (dlerror's
// text) when it cannot be opened or lacks an entry point; every later call
// throws the same.
const CublasLibrary& cublas();

// Whether this process has loaded a cuBLAS library (by cublas() or otherwise);
// read from /proc/self/maps, for tests and diagnostics.
bool cublasLoaded();

}  // namespace distlab::cuda
