# Text as CMake lists, for the scripts of this folder that read source and
# documentation files with `cmake -P` (cited_docs_check.cmake,
# layering_check.cmake, the doc_snippets parser).

# A file's text becomes a CMake list only if it holds no character that
# CMake's list syntax reads: backslashes, semicolons and brackets are swapped
# for markers (source_text_encode) and swapped back (source_text_decode).
function(source_text_encode out text)
  string(REPLACE "\r" "" text "${text}")
  string(REPLACE "\\" "<dl-bs>" text "${text}")
  string(REPLACE ";" "<dl-sc>" text "${text}")
  string(REPLACE "[" "<dl-lb>" text "${text}")
  string(REPLACE "]" "<dl-rb>" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

function(source_text_decode out text)
  string(REPLACE "<dl-rb>" "]" text "${text}")
  string(REPLACE "<dl-lb>" "[" text "${text}")
  string(REPLACE "<dl-sc>" ";" text "${text}")
  string(REPLACE "<dl-bs>" "\\" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# Sets `out` to the lines of `text`, encoded, as a CMake list.
function(source_lines out text)
  source_text_encode(text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(${out} "${lines}" PARENT_SCOPE)
endfunction()

# Prints every element of the list variable named `problems_var` (decoded) and
# fails with "<check>: <n> problem(s) in <count> <what>"; does nothing when the
# list is empty.
function(source_lines_report check problems_var count what)
  if(NOT ${problems_var})
    return()
  endif()
  foreach(problem IN LISTS ${problems_var})
    source_text_decode(problem "${problem}")
    message("${problem}")
  endforeach()
  list(LENGTH ${problems_var} n_problems)
  message(FATAL_ERROR "${check}: ${n_problems} problem(s) in ${count} ${what}")
endfunction()
