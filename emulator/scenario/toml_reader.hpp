#pragma once
// Small helpers over toml++ that turn every type or key mistake into
// ValueError "file:line: message" (scenario_parser.cpp only; keeps toml++ out
// of every other translation unit).
//
// Note [Validated numbers]
// Every number a scenario file gives goes through one of the range-checked
// readers here: number() (finite, in a NumRange), intInRange(), byteSize()
// (a size string checked for overflow and the element limit) and rankKey()
// (a table key that must be a rank). TOML admits nan, +inf and -inf as
// floats; they fail every reader, and a comparison alone would not catch them
// (NaN compares false with every bound). The message names the key, the
// value and the allowed range, so the reader never needs to cast an unchecked
// value into a size, a count or a duration.
#include <toml++/toml.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "emulator/scenario/scenario.hpp"

namespace distlab::emulator::detail {

// Allowed range of a float key: [lo, hi], or (lo, hi] with loOpen; `unit`
// (" s", " ms") is appended in messages.
struct NumRange {
  double lo = 0;
  double hi = 0;
  bool loOpen = false;
  const char* unit = "";
  std::string text() const;  // "(0, 600] s"
};

// Largest element count of one tensor a scenario may ask for (numel or size).
inline constexpr int64_t kMaxScenarioElements = int64_t{1} << 30;

class TomlReader {
 public:
  explicit TomlReader(std::string file) : file_(std::move(file)) {}

  const std::string& file() const { return file_; }
  int lineOf(const toml::node& node) const;
  SourcePos posOf(const toml::node& node) const { return {file_, lineOf(node)}; }
  [[noreturn]] void fail(int line, const std::string& message) const;
  [[noreturn]] void fail(const toml::node& node, const std::string& message) const {
    fail(lineOf(node), message);
  }

  // Rejects keys of `table` not in `known` (naming the known ones).
  void checkKeys(const toml::table& table, const std::string& where,
                 const std::set<std::string>& known) const;

  // Typed getters: nullopt when absent, an error when present with another type.
  std::optional<std::string> str(const toml::table& t, const std::string& key) const;
  std::optional<int64_t> integer(const toml::table& t, const std::string& key) const;
  // An integer or a float: finite and inside `range` (Note [Validated numbers]).
  std::optional<double> number(const toml::table& t, const std::string& key,
                               const NumRange& range) const;
  std::optional<bool> boolean(const toml::table& t, const std::string& key) const;
  std::optional<std::vector<int64_t>> intList(const toml::table& t, const std::string& key) const;
  // A string or an array of strings.
  std::optional<std::vector<std::string>> strList(const toml::table& t,
                                                  const std::string& key) const;
  // An array of strings (a lone string is an error naming the array form).
  std::optional<std::vector<std::string>> strArray(const toml::table& t,
                                                   const std::string& key) const;
  const toml::table* table(const toml::table& t, const std::string& key) const;
  // Line of `key` in `t` (the value's line), or of `t` itself when absent.
  int lineOfKey(const toml::table& t, const std::string& key) const;
  std::string requireStr(const toml::table& t, const std::string& key,
                         const std::string& where) const;

  // Integer in [lo, hi] with a message naming the key and the range.
  std::optional<int64_t> intInRange(const toml::table& t, const std::string& key, int64_t lo,
                                    int64_t hi) const;
  // A rank list; each rank in [0, worldSize).
  std::optional<std::vector<int>> ranks(const toml::table& t, const std::string& key,
                                        int worldSize) const;
  // A size string ("4KiB", "1MiB", "64B", "4096") as a number of `dtype`
  // elements: no overflow, a whole number of elements, at most
  // kMaxScenarioElements.
  std::optional<int64_t> byteSize(const toml::table& t, const std::string& key,
                                  DType dtype) const;
  // A table key naming a rank ("0", "12": decimal digits only) in
  // [0, worldSize); `what` names the table in the message ("per_rank key").
  int rankKey(const toml::key& key, int worldSize, const std::string& what) const;
  // One of `allowed`; the error lists them.
  std::optional<std::string> choice(const toml::table& t, const std::string& key,
                                    const std::vector<std::string>& allowed) const;

 private:
  std::string file_;
};

}  // namespace distlab::emulator::detail
