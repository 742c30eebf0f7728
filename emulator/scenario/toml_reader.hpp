#pragma once
// Small helpers over toml++ that turn every type or key mistake into
// ValueError "file:line: message" (scenario_parser.cpp only; keeps toml++ out
// of every other translation unit).
#include <toml++/toml.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "emulator/scenario/scenario.hpp"

namespace distlab::emulator::detail {

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
  std::optional<double> number(const toml::table& t, const std::string& key) const;  // int or float
  std::optional<bool> boolean(const toml::table& t, const std::string& key) const;
  std::optional<std::vector<int64_t>> intList(const toml::table& t, const std::string& key) const;
  // A string or an array of strings.
  std::optional<std::vector<std::string>> strList(const toml::table& t,
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
  // One of `allowed`; the error lists them.
  std::optional<std::string> choice(const toml::table& t, const std::string& key,
                                    const std::vector<std::string>& allowed) const;

 private:
  std::string file_;
};

}  // namespace distlab::emulator::detail
