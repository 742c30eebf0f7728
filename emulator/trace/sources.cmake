# Traces: clock alignment through the store, merging the ranks' traces,
# overlap metrics (Note [Overlap metrics]).
list(APPEND DISTLAB_EMULATOR_SOURCES trace/overlap_metrics.cpp trace/trace_merge.cpp)
list(APPEND DISTLAB_EMULATOR_DEPS nlohmann_json::nlohmann_json)
if(TARGET distlab_comm)
  list(APPEND DISTLAB_EMULATOR_SOURCES trace/clock_align.cpp trace/rank_trace.cpp)
  list(APPEND DISTLAB_EMULATOR_DEPS distlab::comm)
endif()
# The runner's side (merging a run's traces, overlap expectations) and the
# overlap benchmark need the scenario runner.
if("scenario/runner.cpp" IN_LIST DISTLAB_EMULATOR_SOURCES)
  list(APPEND DISTLAB_EMULATOR_SOURCES trace/scenario_overlap.cpp trace/overlap_bench.cpp
                                       trace/step_time_ratio.cpp)
endif()
