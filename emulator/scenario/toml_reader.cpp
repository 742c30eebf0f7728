#include "emulator/scenario/toml_reader.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "runtime/core/errors.hpp"

namespace distlab::emulator::detail {

namespace {
std::string typeName(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::array: return "an array";
    case toml::node_type::table: return "a table";
    default: return "a date/time";
  }
}
}  // namespace

int TomlReader::lineOf(const toml::node& node) const {
  return static_cast<int>(node.source().begin.line);
}

void TomlReader::fail(int line, const std::string& message) const {
  throw ValueError(fmt::format("{}:{}: {}", file_, line, message));
}

void TomlReader::checkKeys(const toml::table& table, const std::string& where,
                           const std::set<std::string>& known) const {
  for (const auto& [key, value] : table) {
    if (known.count(std::string(key.str())) == 0) {
      int line = key.source().begin.line ? static_cast<int>(key.source().begin.line)
                                         : lineOf(value);
      fail(line, fmt::format("unknown key '{}' in {}; known keys: {}", key.str(), where,
                             fmt::join(known, ", ")));
    }
  }
}

int TomlReader::lineOfKey(const toml::table& t, const std::string& key) const {
  const toml::node* n = t.get(key);
  return n ? lineOf(*n) : lineOf(t);
}

std::optional<std::string> TomlReader::str(const toml::table& t, const std::string& key) const {
  const toml::node* n = t.get(key);
  if (!n) return std::nullopt;
  if (!n->is_string()) fail(*n, fmt::format("'{}' must be a string, found {}", key, typeName(*n)));
  return n->as_string()->get();
}

std::optional<int64_t> TomlReader::integer(const toml::table& t, const std::string& key) const {
  const toml::node* n = t.get(key);
  if (!n) return std::nullopt;
  if (!n->is_integer()) {
    fail(*n, fmt::format("'{}' must be an integer, found {}", key, typeName(*n)));
  }
  return n->as_integer()->get();
}

std::optional<double> TomlReader::number(const toml::table& t, const std::string& key) const {
  const toml::node* n = t.get(key);
  if (!n) return std::nullopt;
  if (n->is_integer()) return static_cast<double>(n->as_integer()->get());
  if (!n->is_floating_point()) {
    fail(*n, fmt::format("'{}' must be a number, found {}", key, typeName(*n)));
  }
  return n->as_floating_point()->get();
}

std::optional<bool> TomlReader::boolean(const toml::table& t, const std::string& key) const {
  const toml::node* n = t.get(key);
  if (!n) return std::nullopt;
  if (!n->is_boolean()) fail(*n, fmt::format("'{}' must be true or false, found {}", key,
                                             typeName(*n)));
  return n->as_boolean()->get();
}

std::optional<std::vector<int64_t>> TomlReader::intList(const toml::table& t,
                                                        const std::string& key) const {
  const toml::node* n = t.get(key);
  if (!n) return std::nullopt;
  if (!n->is_array()) {
    fail(*n, fmt::format("'{}' must be an array of integers, found {}", key, typeName(*n)));
  }
  std::vector<int64_t> out;
  for (const auto& e : *n->as_array()) {
    if (!e.is_integer()) {
      fail(e, fmt::format("'{}' must be an array of integers, found {} in it", key, typeName(e)));
    }
    out.push_back(e.as_integer()->get());
  }
  return out;
}

std::optional<std::vector<std::string>> TomlReader::strList(const toml::table& t,
                                                            const std::string& key) const {
  const toml::node* n = t.get(key);
  if (!n) return std::nullopt;
  if (n->is_string()) return std::vector<std::string>{n->as_string()->get()};
  if (!n->is_array()) {
    fail(*n, fmt::format("'{}' must be a string or an array of strings, found {}", key,
                         typeName(*n)));
  }
  std::vector<std::string> out;
  for (const auto& e : *n->as_array()) {
    if (!e.is_string()) fail(e, fmt::format("'{}' must hold strings, found {}", key, typeName(e)));
    out.push_back(e.as_string()->get());
  }
  return out;
}

const toml::table* TomlReader::table(const toml::table& t, const std::string& key) const {
  const toml::node* n = t.get(key);
  if (!n) return nullptr;
  if (!n->is_table()) fail(*n, fmt::format("'{}' must be a table, found {}", key, typeName(*n)));
  return n->as_table();
}

std::string TomlReader::requireStr(const toml::table& t, const std::string& key,
                                   const std::string& where) const {
  auto v = str(t, key);
  if (!v) fail(lineOf(t), fmt::format("missing required key '{}' in {}", key, where));
  return *v;
}

std::optional<int64_t> TomlReader::intInRange(const toml::table& t, const std::string& key,
                                              int64_t lo, int64_t hi) const {
  auto v = integer(t, key);
  if (v && (*v < lo || *v > hi)) {
    fail(lineOfKey(t, key), fmt::format("'{}' = {} is out of range [{}, {}]", key, *v, lo, hi));
  }
  return v;
}

std::optional<std::vector<int>> TomlReader::ranks(const toml::table& t, const std::string& key,
                                                  int worldSize) const {
  auto list = intList(t, key);
  if (!list) return std::nullopt;
  std::vector<int> out;
  for (int64_t r : *list) {
    if (r < 0 || r >= worldSize) {
      fail(lineOfKey(t, key), fmt::format("rank {} in '{}' does not exist: world_size is {} "
                                          "(ranks 0..{})", r, key, worldSize, worldSize - 1));
    }
    if (std::find(out.begin(), out.end(), r) != out.end()) {
      fail(lineOfKey(t, key), fmt::format("rank {} appears twice in '{}'", r, key));
    }
    out.push_back(static_cast<int>(r));
  }
  return out;
}

std::optional<std::string> TomlReader::choice(const toml::table& t, const std::string& key,
                                              const std::vector<std::string>& allowed) const {
  auto v = str(t, key);
  if (v && std::find(allowed.begin(), allowed.end(), *v) == allowed.end()) {
    fail(lineOfKey(t, key), fmt::format("'{}' = \"{}\" is not valid; use one of: {}", key, *v,
                                        fmt::join(allowed, ", ")));
  }
  return v;
}

}  // namespace distlab::emulator::detail
