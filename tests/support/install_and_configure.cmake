# Shared by the tests that build an outside project against the installed
# package (install_consumer, doc_snippets), in CMake script mode:
#   distlab_install_and_configure(<work dir> <build tree> <project dir>
#                                 <CXX flags> <linker flags> [-DVAR=value ...])
# installs the build tree into <work dir>/prefix and configures <project dir>
# into <work dir>/build with find_package(distlab) pointed at it. A sanitizer
# build passes its flags on, so the project links the same runtime. Stops the
# script with FATAL_ERROR naming the step that failed.
function(distlab_install_and_configure work_dir binary_dir project_dir cxx_flags linker_flags)
  execute_process(COMMAND ${CMAKE_COMMAND} --install "${binary_dir}" --prefix "${work_dir}/prefix"
                  RESULT_VARIABLE rc OUTPUT_QUIET)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install into ${work_dir}/prefix failed: ${rc}")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -S "${project_dir}" -B "${work_dir}/build" -G Ninja
                          "-DCMAKE_PREFIX_PATH=${work_dir}/prefix"
                          "-DCMAKE_CXX_FLAGS=${cxx_flags}"
                          "-DCMAKE_EXE_LINKER_FLAGS=${linker_flags}"
                          ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_QUIET)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "configuring ${project_dir} against ${work_dir}/prefix failed: ${rc}")
  endif()
endfunction()
