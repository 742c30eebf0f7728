# The `layering` test: the emulator's rooms (the folders of emulator/) depend
# on each other one way only, as docs/DESIGN.md ("Layers and folders") and
# emulator/CMakeLists.txt state.
#
#   cmake -DSOURCE_DIR=<repo> -P tests/docs/layering_check.cmake
#
# The table below is the one source of truth for the test: the rooms from low
# to high, and for each the rooms it may include. Checked:
#   - every `#include "emulator/<room>/..."` line of every .cpp/.hpp under
#     emulator/ names its own room or one its room may include
#     (`#include "runtime/<folder>/..."` is allowed in every room, when the
#     folder exists);
#   - every folder of emulator/ is a room of the table (a new room is added
#     here, with its dependencies, before it is used);
#   - a room may include only rooms below it in the order (no cycle);
#   - each room's CMakeLists.txt links exactly the distlab::emulator_<room>
#     targets the table allows it (the cli links the umbrella distlab::emulator);
#   - only a backend includes runtime/comm/work_completion.hpp (Note [Who
#     completes a Work]): the files listed in `completes_work` below.
# Every problem is printed as file:line, then the test fails.
cmake_minimum_required(VERSION 3.25)
include("${CMAKE_CURRENT_LIST_DIR}/source_lines.cmake")

# Rooms from low to high.
set(rooms launcher faults link trace analyze predict workloads scenario program bench cli)
# The rooms each room may include (and, but for cli, links in its CMakeLists.txt).
set(allowed_launcher "")
set(allowed_faults "")
set(allowed_link "")
set(allowed_trace "")
set(allowed_analyze "")
set(allowed_predict link trace)
set(allowed_workloads faults)
set(allowed_scenario launcher faults link trace analyze predict workloads)
set(allowed_program scenario)
set(allowed_bench launcher link trace scenario)
set(allowed_cli launcher faults link trace analyze predict workloads scenario program bench)

if(NOT SOURCE_DIR OR NOT IS_DIRECTORY "${SOURCE_DIR}")
  message(FATAL_ERROR "layering: give the repository as -DSOURCE_DIR=<dir>")
endif()
get_filename_component(SOURCE_DIR "${SOURCE_DIR}" ABSOLUTE)
string(REGEX REPLACE "/+$" "" SOURCE_DIR "${SOURCE_DIR}")

set(problems "")

# The table itself: a room includes only rooms below it.
set(position 0)
foreach(room IN LISTS rooms)
  foreach(dep IN LISTS allowed_${room})
    list(FIND rooms "${dep}" dep_position)
    if(dep_position EQUAL -1 OR NOT dep_position LESS position)
      list(APPEND problems "tests/docs/layering_check.cmake: room '${room}' may include '${dep}', which is not a room below it")
    endif()
  endforeach()
  math(EXPR position "${position} + 1")
endforeach()

# Every folder of emulator/ is a room.
file(GLOB folders LIST_DIRECTORIES true RELATIVE "${SOURCE_DIR}/emulator" "${SOURCE_DIR}/emulator/*")
foreach(folder IN LISTS folders)
  if(IS_DIRECTORY "${SOURCE_DIR}/emulator/${folder}" AND NOT folder IN_LIST rooms)
    list(APPEND problems "emulator/${folder}: a folder that is not a room of tests/docs/layering_check.cmake")
  endif()
endforeach()

# The includes.
file(GLOB_RECURSE sources LIST_DIRECTORIES false RELATIVE "${SOURCE_DIR}"
     "${SOURCE_DIR}/emulator/*.cpp" "${SOURCE_DIR}/emulator/*.hpp")
list(SORT sources)
set(checked 0)
foreach(rel IN LISTS sources)
  string(REGEX REPLACE "^emulator/([^/]+)/.*$" "\\1" room "${rel}")
  if(room STREQUAL rel)
    list(APPEND problems "${rel}: a source outside every room (put it in a room's folder)")
    continue()
  endif()
  if(NOT room IN_LIST rooms)
    continue()  # reported above, once per folder
  endif()
  file(READ "${SOURCE_DIR}/${rel}" text)
  source_lines(lines "${text}")
  set(number 0)
  foreach(line IN LISTS lines)
    math(EXPR number "${number} + 1")
    if(NOT line MATCHES "^[ \t]*#[ \t]*include[ \t]*\"(emulator|runtime)/([^/\"]+)/")
      continue()
    endif()
    set(layer "${CMAKE_MATCH_1}")
    set(dep "${CMAKE_MATCH_2}")
    math(EXPR checked "${checked} + 1")
    if(layer STREQUAL "runtime")
      if(NOT IS_DIRECTORY "${SOURCE_DIR}/runtime/${dep}")
        list(APPEND problems "${rel}:${number}: includes runtime/${dep}/, which is not a folder of runtime/")
      endif()
    elseif(NOT dep STREQUAL room AND NOT dep IN_LIST allowed_${room})
      string(REPLACE ";" ", " may "${allowed_${room}}")
      if(may STREQUAL "")
        set(may "no other room")
      endif()
      list(APPEND problems "${rel}:${number}: room '${room}' includes emulator/${dep}/, but it may include ${may} (the table in tests/docs/layering_check.cmake)")
    endif()
  endforeach()
endforeach()

# The CMake targets: each room links exactly the rooms it may include.
foreach(room IN LISTS rooms)
  set(lists "emulator/${room}/CMakeLists.txt")
  if(NOT EXISTS "${SOURCE_DIR}/${lists}")
    list(APPEND problems "${lists}: missing (every room is its own target)")
    continue()
  endif()
  file(READ "${SOURCE_DIR}/${lists}" text)
  string(REGEX REPLACE "#[^\n]*" "" text "${text}")  # comments name rooms too
  if(room STREQUAL "cli")
    if(NOT text MATCHES "distlab::emulator[^_]")
      list(APPEND problems "${lists}: the cli does not link the umbrella distlab::emulator")
    endif()
    continue()
  endif()
  string(REGEX MATCHALL "distlab::emulator_[a-z_]+" linked "${text}")
  set(deps "")
  foreach(target IN LISTS linked)
    string(REGEX REPLACE "^distlab::emulator_" "" dep "${target}")
    if(NOT dep STREQUAL room)
      list(APPEND deps "${dep}")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES deps)
  foreach(dep IN LISTS deps)
    if(NOT dep IN_LIST allowed_${room})
      list(APPEND problems "${lists}: room '${room}' links distlab::emulator_${dep}, which the table does not allow it")
    endif()
  endforeach()
  foreach(dep IN LISTS allowed_${room})
    if(NOT dep IN_LIST deps)
      list(APPEND problems "${lists}: room '${room}' may include '${dep}' but does not link distlab::emulator_${dep}")
    endif()
  endforeach()
endforeach()

# Who may complete a Work: the backends, the decorators that hand the caller
# a Work of their own, and the tests of Work itself (regular expressions on
# the path from the repository's root).
set(completes_work
  "^runtime/comm/work_completion\\.hpp$"
  "^runtime/comm/backends/"
  "^runtime/comm/cuda_staging_backend\\.cpp$"
  "^runtime/comm/debug/process_group_wrapper_p2p\\.cpp$"
  "^emulator/link/link_backend\\.cpp$"
  "^tests/comm/work_test\\.cpp$"
  "^tests/comm/process_group_test\\.cpp$"
  "^tests/emulator/link_model_test\\.cpp$")  # its backend whose sender arrives late
file(GLOB_RECURSE all_sources LIST_DIRECTORIES false RELATIVE "${SOURCE_DIR}"
     "${SOURCE_DIR}/runtime/*.cpp" "${SOURCE_DIR}/runtime/*.hpp" "${SOURCE_DIR}/runtime/*.cu"
     "${SOURCE_DIR}/emulator/*.cpp" "${SOURCE_DIR}/emulator/*.hpp"
     "${SOURCE_DIR}/bench/*.cpp" "${SOURCE_DIR}/bench/*.hpp"
     "${SOURCE_DIR}/tests/*.cpp" "${SOURCE_DIR}/tests/*.hpp")
list(SORT all_sources)
foreach(rel IN LISTS all_sources)
  file(STRINGS "${SOURCE_DIR}/${rel}" hits REGEX "^[ \t]*#[ \t]*include[ \t]*\"runtime/comm/work_completion\\.hpp\"")
  if(NOT hits)
    continue()
  endif()
  set(allowed FALSE)
  foreach(pattern IN LISTS completes_work)
    if(rel MATCHES "${pattern}")
      set(allowed TRUE)
    endif()
  endforeach()
  if(NOT allowed)
    list(APPEND problems "${rel}: includes runtime/comm/work_completion.hpp, but only a backend completes a Work (Note [Who completes a Work], the list `completes_work` in tests/docs/layering_check.cmake)")
  endif()
endforeach()

list(LENGTH sources n_sources)
source_lines_report(layering problems ${n_sources} "emulator sources")
list(JOIN rooms " < " order)
message(STATUS "layering: ${n_sources} emulator sources, ${checked} includes of emulator/ and "
               "runtime/, all allowed; rooms ${order}")
