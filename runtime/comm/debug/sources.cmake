# runtime/comm/debug: DETAIL wrapper, monitored barrier, flight recorder,
# watchdog (paths relative to runtime/comm).
list(APPEND DISTLAB_COMM_SOURCES
  debug/collective_fingerprint.cpp
  debug/rank_names.cpp
  debug/liveness.cpp
  debug/store_exchange.cpp
  debug/monitored_barrier.cpp
  debug/flight_recorder.cpp
  debug/watchdog.cpp
  debug/monitor_backend.cpp
  debug/process_group_wrapper.cpp
  debug/process_group_wrapper_p2p.cpp
  debug/process_group_wrapper_exchange.cpp
  debug/debug_install.cpp)
list(APPEND DISTLAB_COMM_PRIVATE_DEPS nlohmann_json::nlohmann_json)
