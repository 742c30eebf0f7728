# runtime/comm/backends/shm: the shared-memory backend (paths relative to runtime/comm).
list(APPEND DISTLAB_COMM_SOURCES
  backends/shm/shm_segment.cpp
  backends/shm/shm_wait.cpp
  backends/shm/shm_peers.cpp
  backends/shm/shm_op.cpp
  backends/shm/shm_allreduce_direct.cpp
  backends/shm/shm_allreduce_rsag.cpp
  backends/shm/shm_reduce.cpp
  backends/shm/shm_broadcast.cpp
  backends/shm/shm_allgather.cpp
  backends/shm/shm_scatter.cpp
  backends/shm/shm_eager.cpp
  backends/shm/shm_reduce_scatter.cpp
  backends/shm/shm_alltoall.cpp
  backends/shm/shm_single_copy.cpp
  backends/shm/shm_allreduce_single_copy.cpp
  backends/shm/shm_single_copy_gather.cpp
  backends/shm/shm_reduce_scatter_single_copy.cpp
  backends/shm/shm_algorithm_selector.cpp
  backends/shm/shm_p2p.cpp
  backends/shm/shm_p2p_in_place.cpp
  backends/shm/shm_options.cpp
  backends/shm/shm_backend.cpp
  backends/shm/shm_backend_ops.cpp)
list(APPEND DISTLAB_COMM_BACKEND_REGISTRARS registerShmBackend)
list(APPEND DISTLAB_COMM_PRIVATE_DEPS rt)
