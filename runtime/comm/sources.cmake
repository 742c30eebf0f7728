# runtime/comm (this folder): process groups, Work/Future, registry, groups.
# Paths relative to runtime/comm.
list(APPEND DISTLAB_COMM_SOURCES
  types.cpp
  op_names.cpp
  reduce_kernels.cpp
  future.cpp
  tensor_meta_list.cpp
  work.cpp
  comm_trace.cpp
  failure_reason.cpp
  backend.cpp
  operation.cpp
  forwarding_backend.cpp
  backend_registry.cpp
  backend_options.cpp
  progress_thread.cpp
  op_checks.cpp
  process_group.cpp
  process_group_ops.cpp
  process_group_create.cpp
  group_management.cpp
  init_hook.cpp
  world.cpp
  device_mesh.cpp
  object_collectives.cpp)
if(DISTLAB_HAVE_CUDA)
  list(APPEND DISTLAB_COMM_SOURCES cuda_staging_backend.cpp)
endif()
