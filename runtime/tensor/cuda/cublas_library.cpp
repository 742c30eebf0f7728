#include "runtime/tensor/cuda/cublas_library.hpp"

#include <dlfcn.h>

#include <fstream>
#include <string>

#include "runtime/core/errors.hpp"

namespace distlab::cuda {
namespace {

const std::string& cublasSoname() {
  static const std::string name = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  return name;
}

template <typename Fn>
void lookUp(void* library, const char* symbol, Fn& out) {
  out = reinterpret_cast<Fn>(dlsym(library, symbol));
  if (out == nullptr) {
    throw Error(cublasSoname() + " has no " + symbol +
                "; install the cuBLAS of the CUDA version distlab was built with (" +
                std::to_string(CUBLAS_VER_MAJOR) + ".x)");
  }
}

// The handle is never closed: cuBLAS handles created from it live until exit.
CublasLibrary open() {
  void* library = dlopen(cublasSoname().c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    throw Error("cannot load cuBLAS (" + cublasSoname() +
                "), needed for matmul on a CUDA device: " +
                (why != nullptr ? why : "unknown dlopen error") +
                "; install CUDA's cuBLAS or add its folder to LD_LIBRARY_PATH");
  }
  CublasLibrary lib;
  lookUp(library, "cublasCreate_v2", lib.create);
  lookUp(library, "cublasSetStream_v2", lib.setStream);
  lookUp(library, "cublasSgemmStridedBatched", lib.sgemmStridedBatched);
  lookUp(library, "cublasDgemmStridedBatched", lib.dgemmStridedBatched);
  return lib;
}

}  // namespace

const CublasLibrary& cublas() {
  // A throwing initialiser leaves the static uninitialised: the next call
  // tries again and throws the same error.
  static const CublasLibrary lib = open();
  return lib;
}

bool cublasLoaded() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("libcublas") != std::string::npos) return true;
  }
  return false;
}

}  // namespace distlab::cuda
