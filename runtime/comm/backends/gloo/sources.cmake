# runtime/comm/backends/gloo: the Gloo backend (paths relative to runtime/comm).
# Built only when the top-level CMake found libgloo (DISTLAB_HAVE_GLOO).
if(DISTLAB_HAVE_GLOO)
  list(APPEND DISTLAB_COMM_SOURCES
    backends/gloo/gloo_store_adapter.cpp
    backends/gloo/gloo_device.cpp
    backends/gloo/gloo_dtype.cpp
    backends/gloo/gloo_tracking.cpp
    backends/gloo/gloo_peer_monitor.cpp
    backends/gloo/gloo_collectives.cpp
    backends/gloo/gloo_composed.cpp
    backends/gloo/gloo_p2p.cpp
    backends/gloo/gloo_backend.cpp
    backends/gloo/gloo_backend_ops.cpp)
  list(APPEND DISTLAB_COMM_BACKEND_REGISTRARS registerGlooBackend)
  list(APPEND DISTLAB_COMM_PRIVATE_DEPS gloo)
endif()
