# emulator/bench: `distlab bench collectives` (paths relative to emulator/).
if(TARGET distlab_comm)
  list(APPEND DISTLAB_EMULATOR_SOURCES
    bench/bench_rounds.cpp
    bench/collectives_bench.cpp
    bench/collective_timer.cpp
    bench/peer_bench.cpp)
  list(APPEND DISTLAB_EMULATOR_DEPS distlab::comm nlohmann_json::nlohmann_json)
endif()
