# The launcher (paths relative to emulator/). It hosts and uses the TCP store,
# so it needs distlab_comm. The exit guard needs nothing but the core.
list(APPEND DISTLAB_EMULATOR_SOURCES
  launcher/exit_guard.cpp
  launcher/exit_watchdog.cpp)
if(TARGET distlab_comm)
  list(APPEND DISTLAB_EMULATOR_SOURCES
    launcher/launch_options.cpp
    launcher/child_process.cpp
    launcher/output_pump.cpp
    launcher/stack_dump.cpp
    launcher/launch_attempt.cpp
    launcher/launcher.cpp
    launcher/rank_spawner.cpp)
  list(APPEND DISTLAB_EMULATOR_DEPS distlab::comm)
endif()
