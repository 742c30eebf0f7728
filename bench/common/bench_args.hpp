#pragma once
// Note [Bench command lines]
// Every bench binary reads its command line through parseBenchArgs():
//   - its own flags are CLI11 options on `app` ("--rounds=3" or "--rounds 3");
//   - Google Benchmark binaries also take the --benchmark_* flags, which go to
//     benchmark::Initialize; one it does not consume (unknown, or a value it
//     cannot parse) is an error, and the format flags are checked first
//     (Google Benchmark would print its usage and exit 0 on a bad format).
// `--help` prints the usage and exits 0 without running anything; an unknown
// flag, a malformed value or an unusable path prints a message naming the
// flag and exits 2, before any work starts. "--flag=" gives the flag an empty
// value (CLI11 alone would take the next argument as its value), which is an
// error unless the flag was marked with cli::allowEmptyValue (Note [One reader
// for command lines] in emulator/cli/usage_checks.hpp).
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "emulator/cli/usage_checks.hpp"  // cli::allowEmptyValue

namespace distlab::bench {

struct BenchArgsOptions {
  bool googleBenchmark = false;  // also accept and validate --benchmark_* flags
};

// Parses `argv` (exits the process on --help and on errors, see the Note).
void parseBenchArgs(CLI::App& app, int argc, char** argv, const BenchArgsOptions& options = {});

// Prints "<app>: error: <message>" and a pointer to --help; exits 2.
[[noreturn]] void usageError(const CLI::App& app, const std::string& message);

// "2,4" -> {2, 4}: integers in [lo, hi], at least one; else usageError naming `flag`.
std::vector<int> intList(const CLI::App& app, const std::string& flag, const std::string& text,
                         int lo, int hi);
// "1,5,25" -> {1, 5, 25}: finite numbers in (0, hi], at least one unless
// `allowEmpty` ("" is then the empty list).
std::vector<double> positiveList(const CLI::App& app, const std::string& flag,
                                 const std::string& text, double hi, bool allowEmpty = false);

// usageError unless a file can be read at `path`.
void requireReadable(const CLI::App& app, const std::string& flag, const std::string& path);
// usageError unless a file can be written at `path` (emulator/cli/usage_checks.hpp).
void requireWritable(const CLI::App& app, const std::string& flag, const std::string& path);

}  // namespace distlab::bench
