# Link emulation (alpha-beta model + kLayerLink Backend decorator).
if(TARGET distlab_comm)
  list(APPEND DISTLAB_EMULATOR_SOURCES link/link_model.cpp link/link_backend.cpp)
  list(APPEND DISTLAB_EMULATOR_DEPS distlab::comm)
endif()
