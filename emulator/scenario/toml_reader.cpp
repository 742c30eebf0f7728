#include "emulator/scenario/toml_reader.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

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

std::string NumRange::text() const {
  return fmt::format("{}{}, {}]{}", loOpen ? "(" : "[", lo, hi, unit);
}

std::optional<double> TomlReader::number(const toml::table& t, const std::string& key,
                                         const NumRange& range) const {
  const toml::node* n = t.get(key);
  if (!n) return std::nullopt;
  if (!n->is_integer() && !n->is_floating_point()) {
    fail(*n, fmt::format("'{}' must be a number, found {}", key, typeName(*n)));
  }
  const double v = n->is_integer() ? static_cast<double>(n->as_integer()->get())
                                   : n->as_floating_point()->get();
  if (!std::isfinite(v)) {
    fail(*n, fmt::format("'{}' = {} is not a finite number; allowed: {}", key, v, range.text()));
  }
  const bool belowLo = range.loOpen ? v <= range.lo : v < range.lo;
  if (belowLo || v > range.hi) {
    fail(*n, fmt::format("'{}' = {} is out of range; allowed: {}", key, v, range.text()));
  }
  return v;
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

std::optional<std::vector<std::string>> TomlReader::strArray(const toml::table& t,
                                                             const std::string& key) const {
  const toml::node* n = t.get(key);
  if (n && !n->is_array()) {
    fail(*n, fmt::format("'{}' must be an array of strings (e.g. {} = [\"...\"]), found {}", key,
                         key, typeName(*n)));
  }
  return strList(t, key);
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

namespace {

// "4KiB" -> 4096: digits, then an optional unit. Throws ValueError naming the
// problem; never wraps (checked multiplication).
int64_t parseByteCount(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && text[i] == ' ') ++i;
  if (i < text.size() && text[i] == '-') throw ValueError("sizes cannot be negative");
  const size_t first = i;
  int64_t value = 0;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
    if (__builtin_mul_overflow(value, 10, &value) ||
        __builtin_add_overflow(value, text[i] - '0', &value)) {
      throw ValueError("the number overflows a 64-bit byte count");
    }
  }
  if (i == first) throw ValueError("a size starts with a number (e.g. \"4KiB\", \"1MiB\", \"64B\")");
  std::string unit = text.substr(i);
  unit.erase(std::remove(unit.begin(), unit.end(), ' '), unit.end());
  int shift = 0;
  if (unit == "KiB") shift = 10;
  else if (unit == "MiB") shift = 20;
  else if (unit == "GiB") shift = 30;
  else if (!unit.empty() && unit != "B") {
    throw ValueError(fmt::format("unknown size unit '{}' (use B, KiB, MiB or GiB)", unit));
  }
  if (value > (std::numeric_limits<int64_t>::max() >> shift)) {
    throw ValueError("the size overflows a 64-bit byte count");
  }
  return value << shift;
}

}  // namespace

std::optional<int64_t> TomlReader::byteSize(const toml::table& t, const std::string& key,
                                            DType dtype) const {
  auto text = str(t, key);
  if (!text) return std::nullopt;
  const int64_t es = static_cast<int64_t>(elementSize(dtype));
  try {
    const int64_t bytes = parseByteCount(*text);
    if (bytes % es != 0) {
      throw ValueError(fmt::format("{} bytes is not a whole number of {} elements", bytes,
                                   dtypeName(dtype)));
    }
    if (bytes / es > kMaxScenarioElements) {
      throw ValueError(fmt::format("{} elements of {} is past the limit of {} elements per "
                                   "tensor", bytes / es, dtypeName(dtype), kMaxScenarioElements));
    }
    return bytes / es;
  } catch (const ValueError& e) {
    fail(lineOfKey(t, key), fmt::format("'{}' = \"{}\": {}; allowed: 0 to {} elements", key,
                                        *text, e.what(), kMaxScenarioElements));
  }
}

int TomlReader::rankKey(const toml::key& key, int worldSize, const std::string& what) const {
  const std::string text(key.str());
  const int line = static_cast<int>(key.source().begin.line);
  const bool digits = !text.empty() && text.size() <= 6 &&
                      std::all_of(text.begin(), text.end(),
                                  [](unsigned char c) { return std::isdigit(c); });
  // "01" would be a second spelling of rank 1, and one of the two values dropped.
  const bool leadingZero = text.size() > 1 && text[0] == '0';
  const int rank = digits && !leadingZero ? std::stoi(text) : -1;
  if (leadingZero && digits) {
    fail(line, fmt::format("{} '{}': write the rank without leading zeros ('{}')", what, text,
                           std::stoi(text)));
  }
  if (rank < 0 || rank >= worldSize) {
    fail(line, fmt::format("{} '{}' is not a rank of this world: use a number in 0..{}", what,
                           text, worldSize - 1));
  }
  return rank;
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
