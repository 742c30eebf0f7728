# Fault injection: fault plan, event log, Backend decorator (kLayerFault), Store decorator.
if(TARGET distlab_comm)
  list(APPEND DISTLAB_EMULATOR_SOURCES
    faults/event_log.cpp
    faults/fault_plan.cpp
    faults/fault_backend.cpp
    faults/faulty_store.cpp)
endif()
