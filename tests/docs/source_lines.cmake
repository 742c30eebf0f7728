# Helpers shared by the source checks of this folder (cited_docs_check.cmake,
# layering_check.cmake), which run with `cmake -P`.

# Sets `out` to the lines of `text` as a CMake list. The characters CMake's
# list syntax reads are swapped for markers -- <bs> <sc> <lb> <rb> for \ ; [ ]
# -- that no path a check looks for contains; source_lines_report() turns the
# brackets back when it prints.
function(source_lines out text)
  string(REPLACE "\r" "" text "${text}")
  string(REPLACE "\\" "<bs>" text "${text}")
  string(REPLACE ";" "<sc>" text "${text}")
  string(REPLACE "[" "<lb>" text "${text}")
  string(REPLACE "]" "<rb>" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(${out} "${lines}" PARENT_SCOPE)
endfunction()

# Prints every element of the list variable named `problems_var` and fails
# with "<check>: <n> problem(s) in <count> <what>"; does nothing when the list
# is empty.
function(source_lines_report check problems_var count what)
  if(NOT ${problems_var})
    return()
  endif()
  foreach(problem IN LISTS ${problems_var})
    string(REPLACE "<lb>" "[" problem "${problem}")
    string(REPLACE "<rb>" "]" problem "${problem}")
    message("${problem}")
  endforeach()
  list(LENGTH ${problems_var} n_problems)
  message(FATAL_ERROR "${check}: ${n_problems} problem(s) in ${count} ${what}")
endfunction()
