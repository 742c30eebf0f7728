# distlab_add_scenario_tests(PROGRAM <target> FOLDER <dir>
#                            [LABELS <label>...] [PREFIX <name>] [DISTLAB <path>])
#
# Registers one CTest test per scenario file (*.toml, sorted) of FOLDER for a
# user's program target, in the style of gtest_discover_tests: each test runs
#   distlab run --program $<TARGET_FILE:<target>> <file>
# so the scenario's `command = ["anything", args...]` gets the built program
# in place of its first word (Note [Programs under a scenario] in
# runtime/comm/init_hook.hpp). Test name: <PREFIX><file stem> (PREFIX
# defaults to "<target>."). Labels: "scenario", "program" and LABELS. The
# test's timeout is the scenario's run_timeout (60 s when the file gives none)
# plus 60 s for the runner's teardown and checks, read from the file's
# `run_timeout = N` line at configure time (CMake re-runs when a file changes).
# DISTLAB: the `distlab` executable (default: the distlab::cli target, built
# in the same tree or imported from the installed package).
function(distlab_add_scenario_tests)
  cmake_parse_arguments(ARG "" "PROGRAM;FOLDER;PREFIX;DISTLAB" "LABELS" ${ARGN})
  if(NOT ARG_PROGRAM OR NOT TARGET ${ARG_PROGRAM})
    message(FATAL_ERROR "distlab_add_scenario_tests: PROGRAM '${ARG_PROGRAM}' is not a target; "
                        "give the executable target of your program")
  endif()
  if(NOT ARG_FOLDER)
    message(FATAL_ERROR "distlab_add_scenario_tests: give FOLDER <folder of scenario files>")
  endif()
  get_filename_component(folder "${ARG_FOLDER}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  if(NOT IS_DIRECTORY "${folder}")
    message(FATAL_ERROR "distlab_add_scenario_tests: FOLDER '${folder}' is not a directory")
  endif()
  if(NOT DEFINED ARG_PREFIX)
    set(ARG_PREFIX "${ARG_PROGRAM}.")
  endif()
  if(ARG_DISTLAB)
    set(distlab "${ARG_DISTLAB}")
  elseif(TARGET distlab::cli)
    set(distlab "$<TARGET_FILE:distlab::cli>")
  else()
    message(FATAL_ERROR "distlab_add_scenario_tests: no distlab::cli target; find_package(distlab) "
                        "first, or give DISTLAB <path to the distlab executable>")
  endif()
  file(GLOB files CONFIGURE_DEPENDS "${folder}/*.toml")
  list(SORT files)
  if(NOT files)
    message(FATAL_ERROR "distlab_add_scenario_tests: no *.toml scenario file in '${folder}'")
  endif()
  foreach(file IN LISTS files)
    get_filename_component(stem "${file}" NAME_WE)
    file(STRINGS "${file}" timeout_lines REGEX "^[ \t]*run_timeout[ \t]*=")
    set(timeout 60)
    if(timeout_lines)
      list(GET timeout_lines 0 line)
      string(REGEX MATCH "=[ \t]*([0-9]+)" ignored "${line}")
      if(CMAKE_MATCH_1)
        set(timeout ${CMAKE_MATCH_1})
      endif()
    endif()
    math(EXPR timeout "${timeout} + 60")
    set(name "${ARG_PREFIX}${stem}")
    add_test(NAME "${name}" COMMAND "${distlab}" run --program "$<TARGET_FILE:${ARG_PROGRAM}>"
                                    "${file}")
    # 77: `distlab run` skipped the scenario (device = "cuda" without a GPU).
    set_tests_properties("${name}" PROPERTIES LABELS "scenario;program;${ARG_LABELS}"
                                              TIMEOUT ${timeout} SKIP_RETURN_CODE 77)
  endforeach()
endfunction()
