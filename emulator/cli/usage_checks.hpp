#pragma once
// Note [One reader for command lines]
// The `distlab` CLI and every bench binary read their flags with CLI11 and
// check values with the functions below (header-only, so a bench binary needs
// no CLI library). Each throws ValueError naming the flag, the value and what
// to do, which the caller turns into exit code 2 before any work starts.
// requireExplicitValues() closes CLI11's silent defaults for a whole app:
//   - an empty value (`--iters ''`, `--json=`) is an error, because CLI11
//     would turn it into 0 or the default; the few flags whose empty value
//     means "none" say so with allowEmptyValue();
//   - a flag given a value (`--verbose=3`) is an error (CLI11 would count it).
// Comma lists go through splitCommaList(), which refuses empty items
// anywhere, a trailing comma included.
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "runtime/core/errors.hpp"

namespace distlab::cli {

// A file can be written at `path` (created if missing; a file created only
// for the check is removed again). Checked by creating it, not by access(),
// so it also holds for root and on read-only mounts.
inline void requireWritableFile(const std::string& flag, const std::string& path) {
  if (path.empty()) throw ValueError(flag + ": give a file path");
  const bool existed = std::filesystem::exists(path);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw ValueError(flag + " " + path + ": cannot write this file (" + std::strerror(errno) +
                     "); give a path in a writable folder");
  }
  ::close(fd);
  if (!existed) ::unlink(path.c_str());
}

// `path` is (or is now created as) a folder a file can be written in.
inline void requireWritableDir(const std::string& flag, const std::string& path) {
  if (path.empty()) throw ValueError(flag + ": give a folder path");
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec || !std::filesystem::is_directory(path)) {
    throw ValueError(flag + " " + path + ": cannot create this folder (" +
                     (ec ? ec.message() : std::string("a file is in the way")) +
                     "); give a writable folder");
  }
  std::string probe = path + "/.distlab-write-check-XXXXXX";
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    throw ValueError(flag + " " + path + ": cannot write in this folder (" +
                     std::strerror(errno) + "); give a writable folder");
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

// A file exists at `path` and can be read (a script or input named by a flag).
inline void requireReadableFile(const std::string& flag, const std::string& path) {
  if (path.empty()) throw ValueError(flag + ": give a file path");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw ValueError(flag + " " + path + ": cannot read this file (" + std::strerror(errno) +
                     "); give an existing file");
  }
  ::close(fd);
}

// "a,b" -> {"a", "b"}. An empty item anywhere ("a,", ",a", "a,,b") is an
// error naming `flag`; "" is the empty list only when `allowEmpty`.
inline std::vector<std::string> splitCommaList(const std::string& flag, const std::string& text,
                                               bool allowEmpty = false) {
  std::vector<std::string> out;
  if (text.empty()) {
    if (allowEmpty) return out;
    throw ValueError(flag + ": give at least one value");
  }
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    out.push_back(text.substr(start, comma == std::string::npos ? comma : comma - start));
    if (out.back().empty()) {
      throw ValueError(flag + " '" + text + "': empty item in the comma list");
    }
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

// A CLI11 check for unsigned options: digits only. CLI11 itself would take
// "-1" for a uint64_t as 2^64-1.
inline CLI::Validator unsignedNumber() {
  return CLI::Validator(
      [](std::string& value) {
        const bool digits = !value.empty() && value.find_first_not_of("0123456789") ==
                                                  std::string::npos;
        return digits ? std::string() : std::string("give a whole number >= 0 (digits only)");
      },
      "");
}

namespace detail {
inline std::set<const CLI::Option*>& emptyValueAllowed() {
  static std::set<const CLI::Option*> options;
  return options;
}
}  // namespace detail

// `option` takes '' as a meaningful value (e.g. "no hooks"); returns it.
inline CLI::Option* allowEmptyValue(CLI::Option* option) {
  detail::emptyValueAllowed().insert(option);
  return option;
}

// Applies Note [One reader for command lines] to `app`, its options and all
// its subcommands. Call after every option is added, before parsing.
inline void requireExplicitValues(CLI::App& app) {
  for (CLI::Option* option : app.get_options([](CLI::Option*) { return true; })) {
    if (option->get_expected_min() == 0) {
      option->disable_flag_override();  // `--flag=value` is refused
    } else if (detail::emptyValueAllowed().count(option) == 0) {
      // transform(), not check(): it runs first, before a range check would
      // answer "Value  not in range".
      option->transform(CLI::Validator(
          [](std::string& value) {
            return value.empty() ? std::string("an empty value is not allowed; give a value "
                                               "(see --help)")
                                 : std::string();
          },
          ""));
    }
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    requireExplicitValues(*sub);
  }
}

}  // namespace distlab::cli
