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
  set_tests_properties("${_name}" PROPERTIES LABELS "scenario;${_group}" TIMEOUT 90)
endforeach()
