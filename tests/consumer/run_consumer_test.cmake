# Installs distlab into a scratch prefix and builds a tiny outside project
# against it with find_package(distlab). Run by the `install_consumer` test.
include("${CMAKE_CURRENT_LIST_DIR}/../support/install_and_configure.cmake")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
distlab_install_and_configure("${WORK_DIR}" "${BINARY_DIR}" "${SOURCE_DIR}/tests/consumer/project"
                              "${CONSUMER_CXX_FLAGS}" "${CONSUMER_LINKER_FLAGS}")
execute_process(COMMAND ${CMAKE_COMMAND} --build "${WORK_DIR}/build" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the consumer project failed: ${rc}")
endif()
execute_process(COMMAND "${WORK_DIR}/build/consumer" RESULT_VARIABLE rc OUTPUT_VARIABLE out)
message(STATUS "consumer printed: ${out}")
if(NOT rc EQUAL 0 OR NOT out MATCHES "distlab consumer ok")
  message(FATAL_ERROR "the consumer program failed: rc=${rc} output=${out}")
endif()
# The worked examples, through the project's own CTest registrations from the
# installed package: the trainer's 9 scenarios (distlab_add_scenario_tests)
# and its backend under the collective suite, passing and, with its bug on,
# failing with the seed named (distlab_add_backend_tests).
execute_process(COMMAND ${CMAKE_CTEST_COMMAND} --test-dir "${WORK_DIR}/build" -L "program|backend"
                        --output-on-failure --timeout 300
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
message(STATUS "the consumer's own tests printed: ${out}")
if(NOT rc EQUAL 0 OR NOT out MATCHES "100% tests passed, 0 tests failed out of 14")
  message(FATAL_ERROR "the consumer's own tests failed: rc=${rc}")
endif()
file(REMOVE_RECURSE "${WORK_DIR}")
