# The `doc_snippets` test: installs distlab into a scratch prefix, compiles
# every ```cpp block of the repository's .md files against it as an outside
# project would (tests/docs/project), and runs each `run` snippet under the
# installed `distlab launch` with its number of ranks. Syntax: README.md here.
#
#   cmake -DSOURCE_DIR=<repo> -DBINARY_DIR=<build> -DWORK_DIR=<scratch>
#         [-DSNIPPET_CXX_FLAGS=...] [-DSNIPPET_LINKER_FLAGS=...] -P run_doc_snippets.cmake
cmake_minimum_required(VERSION 3.25)
include("${CMAKE_CURRENT_LIST_DIR}/snippet_parse.cmake")
include("${CMAKE_CURRENT_LIST_DIR}/snippet_source.cmake")
include("${CMAKE_CURRENT_LIST_DIR}/../support/install_and_configure.cmake")

# A snippet that hangs is stopped by the launcher after this many seconds.
set(run_timeout 120)
set(launcher_timeout 180)

doc_snippets_markdown_files(markdown "${SOURCE_DIR}")
foreach(rel IN LISTS markdown)
  doc_snippets_parse("${SOURCE_DIR}/${rel}" "${rel}")
endforeach()
get_property(count GLOBAL PROPERTY DOC_SNIPPET_COUNT)
if(NOT count)
  message(FATAL_ERROR "no ```cpp block in ${markdown}")
endif()

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
doc_snippets_write_source("${WORK_DIR}/snippets.cpp" "${SOURCE_DIR}"
                          "${CMAKE_CURRENT_LIST_DIR}/preambles")

distlab_install_and_configure("${WORK_DIR}" "${BINARY_DIR}" "${CMAKE_CURRENT_LIST_DIR}/project"
                              "${SNIPPET_CXX_FLAGS}" "${SNIPPET_LINKER_FLAGS}"
                              "-DDOC_SNIPPETS_SOURCE=${WORK_DIR}/snippets.cpp")
execute_process(COMMAND ${CMAKE_COMMAND} --build "${WORK_DIR}/build"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  # The #line directives make the compiler name the .md file and line.
  source_text_encode(encoded "${out}")  # compiler messages hold semicolons and brackets
  string(REGEX MATCHALL "[^\n]*\\.md:[0-9]+:[0-9]+: error:[^\n]*" errors "${encoded}")
  set(named "")
  foreach(error IN LISTS errors)
    source_text_decode(error "${error}")
    doc_snippets_fence_of("${error}" "${SOURCE_DIR}" fence)
    string(APPEND named "  ${error}\n    (the snippet at ${fence})\n")
  endforeach()
  message(FATAL_ERROR "${out}\nthe documented snippets do not compile:\n${named}")
endif()

set(failures "")
set(summary "")
math(EXPR last "${count} - 1")
foreach(k RANGE ${last})
  foreach(field FILE FENCE MODE RANKS REASON INDEX)
    get_property(${field} GLOBAL PROPERTY DOC_SNIPPET_${k}_${field})
  endforeach()
  source_text_decode(REASON "${REASON}")
  set(where "${FILE}:${FENCE}")
  if(NOT MODE STREQUAL "run")
    if(NOT REASON STREQUAL "")
      set(REASON ": ${REASON}")
    endif()
    string(APPEND summary "  ${where}: ${MODE}${REASON}\n")
    continue()
  endif()
  # Each run starts in a folder of its own, for the files a snippet writes.
  set(run_dir "${WORK_DIR}/run/${INDEX}")
  file(MAKE_DIRECTORY "${run_dir}")
  execute_process(COMMAND "${WORK_DIR}/prefix/bin/distlab" launch --nproc-per-node ${RANKS}
                          --master-port 0 --timeout ${run_timeout} --
                          "${WORK_DIR}/build/doc_snippets" ${INDEX}
                  WORKING_DIRECTORY "${run_dir}"
                  # Only if the launcher itself hung: it stops the ranks at run_timeout.
                  TIMEOUT ${launcher_timeout}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc EQUAL 0)
    string(APPEND summary "  ${where}: run, ${RANKS} rank(s): ok\n")
  else()
    string(APPEND summary "  ${where}: run, ${RANKS} rank(s): FAILED\n")
    string(APPEND failures "${where}: the snippet failed under `distlab launch "
                           "--nproc-per-node ${RANKS}` (exit ${rc}):\n${out}\n")
  endif()
endforeach()
message(STATUS "documented C++ snippets:\n${summary}")
if(NOT failures STREQUAL "")
  message(FATAL_ERROR "${failures}")
endif()
file(REMOVE_RECURSE "${WORK_DIR}")
