# runtime/comm/backends/nccl: the NCCL backend (paths relative to runtime/comm).
# Built only when the top-level CMake found CUDA and NCCL (DISTLAB_HAVE_NCCL);
# without it, asking for "nccl" says "distlab was built without NCCL"
# (backend_registry.cpp).
if(DISTLAB_HAVE_NCCL)
  list(APPEND DISTLAB_COMM_SOURCES
    backends/nccl/nccl_util.cpp
    backends/nccl/nccl_work.cpp
    backends/nccl/nccl_comm.cpp
    backends/nccl/nccl_backend.cpp
    backends/nccl/nccl_backend_ops.cpp
    backends/nccl/nccl_backend_p2p.cpp)
  list(APPEND DISTLAB_COMM_BACKEND_REGISTRARS registerNcclBackend)
  list(APPEND DISTLAB_COMM_PRIVATE_DEPS ${DISTLAB_NCCL_LIBRARY})
endif()
