# One CTest test per scenario file (duckdb style: the test is named by its
# path), labelled `scenario` plus its group folder. Run by `distlab run FILE`,
# which exits non-zero when an expectation fails. Groups whose engine or layer
# is not built yet (ddp, debug) are registered only when their target exists.
if(NOT TARGET distlab_emulator)
  return()
endif()
file(GLOB_RECURSE _distlab_scenarios RELATIVE "${CMAKE_CURRENT_SOURCE_DIR}" CONFIGURE_DEPENDS
     "${CMAKE_CURRENT_SOURCE_DIR}/*.toml")
list(SORT _distlab_scenarios)
foreach(_file ${_distlab_scenarios})
  get_filename_component(_group "${_file}" DIRECTORY)
  if(_group MATCHES "^ddp" AND NOT TARGET distlab_ddp)
    continue()
  endif()
  if(_group MATCHES "^fsdp" AND NOT TARGET distlab_fsdp)
    continue()
  endif()
  if(_group STREQUAL "debug" AND NOT EXISTS "${PROJECT_SOURCE_DIR}/runtime/comm/debug/sources.cmake")
    continue()
  endif()
  set(_name "scenarios/${_file}")
  add_test(NAME "${_name}" COMMAND distlab_cli run "${CMAKE_CURRENT_SOURCE_DIR}/${_file}")
  set_tests_properties("${_name}" PROPERTIES LABELS "scenario;${_group}" TIMEOUT 90)
endforeach()
