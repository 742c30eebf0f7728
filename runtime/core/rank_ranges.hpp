#pragma once
// Lists of ranks for people: runs of four or more consecutive ranks folded
// into "first-last" ("0-776,778-1023"), so a list from a 1,024-rank job is a
// few characters, not 4 KB of one line. The scenario diagnosis and `distlab
// analyze` print rank sets through it.
#include <string>
#include <string_view>
#include <vector>

namespace distlab {

// `ranks` sorted ascending (unsorted input is listed as given, runs found
// only where consecutive); joined with `separator`: {0,1,2,3,5} -> "0-3,5".
std::string foldRankRuns(const std::vector<int>& ranks, std::string_view separator = ",");

}  // namespace distlab
