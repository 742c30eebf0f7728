# Scenario files: parser/validation, workloads (collective scripts, training
# through the engine registry), the per-rank worker and the runner.
if(TARGET distlab_comm AND TARGET distlab_nn AND TARGET distlab_optim
   AND EXISTS "${CMAKE_CURRENT_LIST_DIR}/../../runtime/comm/store/rendezvous.hpp"
   AND EXISTS "${CMAKE_CURRENT_LIST_DIR}/../../runtime/comm/store/tcp_store_server.hpp")
  list(APPEND DISTLAB_EMULATOR_SOURCES
    scenario/toml_reader.cpp
    scenario/scenario_parser.cpp
    scenario/workload_parser.cpp
    scenario/fault_expect_parser.cpp
    scenario/expect_parser.cpp
    scenario/engine_registry.cpp
    scenario/local_engine.cpp
    scenario/rank_result.cpp
    scenario/training_model.cpp
    scenario/reference_check.cpp
    scenario/training_workload.cpp
    scenario/collective_workload.cpp
    scenario/worker.cpp
    scenario/rank_processes.cpp
    scenario/diagnosis.cpp
    scenario/expectations.cpp
    scenario/trace_writer.cpp
    scenario/runner.cpp)
  list(APPEND DISTLAB_EMULATOR_DEPS tomlplusplus::tomlplusplus nlohmann_json::nlohmann_json
       fmt::fmt distlab::comm distlab::nn distlab::optim distlab::join distlab::zero)
  if(TARGET distlab_ddp AND EXISTS "${CMAKE_CURRENT_LIST_DIR}/ddp_engine.cpp")
    list(APPEND DISTLAB_EMULATOR_SOURCES scenario/ddp_engine.cpp)
    list(APPEND DISTLAB_EMULATOR_DEPS distlab::ddp)
    set_source_files_properties(scenario/engine_registry.cpp PROPERTIES
                                COMPILE_DEFINITIONS DISTLAB_SCENARIO_HAVE_DDP=1)
  endif()
endif()
