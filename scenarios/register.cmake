# One CTest test per scenario file (duckdb style: the test is named by its
# path), labelled `scenario` plus its group folder. Run by `distlab run FILE`,
# which exits non-zero when an expectation fails. Every group is registered:
# every engine and layer a scenario uses is always built.
file(GLOB_RECURSE _distlab_scenarios RELATIVE "${CMAKE_CURRENT_SOURCE_DIR}" CONFIGURE_DEPENDS
     "${CMAKE_CURRENT_SOURCE_DIR}/*.toml")
list(SORT _distlab_scenarios)
foreach(_file ${_distlab_scenarios})
  get_filename_component(_group "${_file}" DIRECTORY)
  set(_name "scenarios/${_file}")
  add_test(NAME "${_name}" COMMAND distlab_cli run "${CMAKE_CURRENT_SOURCE_DIR}/${_file}")
  # `distlab run` exits 77 for a scenario this machine cannot run (device =
  # "cuda" without a GPU): reported as skipped, with its SKIP line in the log.
  set_tests_properties("${_name}" PROPERTIES SKIP_RETURN_CODE 77)
  if(_group STREQUAL "scale/large")
    # Hundreds to a thousand ranks, minutes each, the whole machine: labelled
    # scale and scale_large, which the default test preset leaves out (run
    # them with `ctest --test-dir build/default -L scale`), one at a time.
    set_tests_properties("${_name}" PROPERTIES LABELS "scenario;scale;scale_large" TIMEOUT 900
                                               RUN_SERIAL TRUE)
  elseif(_group STREQUAL "scale")
    # The default run's one scale scenario: alone, so the rest of the run does
    # not slow its 256 ranks down.
    set_tests_properties("${_name}" PROPERTIES LABELS "scenario;scale" TIMEOUT 120 RUN_SERIAL TRUE)
  else()
    set_tests_properties("${_name}" PROPERTIES LABELS "scenario;${_group}" TIMEOUT 90)
  endif()
endforeach()
