#include "runtime/core/check.hpp"

namespace distlab::detail {

std::string checkMessage(const char* file, int line, std::string_view condition,
                         const std::string& message, const std::string& values) {
  std::string text = concat(file, ":", line, ": ");
  text += message.empty() ? std::string("check failed") : message;
  text += concat(" (check failed: ", condition);
  if (!values.empty()) text += "; " + values;
  text += ")";
  return text;
}

}  // namespace distlab::detail
