#include "runtime/core/rank_ranges.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace distlab {

std::string foldRankRuns(const std::vector<int>& ranks, std::string_view separator) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (j - i >= 3) {
      parts.push_back(fmt::format("{}-{}", ranks[i], ranks[j]));
    } else {
      for (size_t k = i; k <= j; ++k) parts.push_back(std::to_string(ranks[k]));
    }
    i = j + 1;
  }
  return fmt::format("{}", fmt::join(parts, separator));
}

}  // namespace distlab
