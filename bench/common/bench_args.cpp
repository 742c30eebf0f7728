#include "bench/common/bench_args.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "emulator/cli/usage_checks.hpp"
#ifdef DISTLAB_BENCH_HAS_BLAS
#include "runtime/tensor/blas_info.hpp"
#endif

namespace distlab::bench {
namespace {

constexpr const char* kBenchmarkFlagsHelp =
    "Google Benchmark flags are passed through, e.g. --benchmark_filter=REGEX, "
    "--benchmark_repetitions=N, --benchmark_min_time=SECONDS, "
    "--benchmark_format=console|json|csv, --benchmark_out=FILE, "
    "--benchmark_out_format=console|json|csv, --benchmark_list_tests";

bool startsWith(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

// The format flags Google Benchmark would answer with usage and exit 0.
void checkBenchmarkFormats(const CLI::App& app, const std::vector<std::string>& flags) {
  for (const std::string& f : flags) {
    for (const std::string name : {"--benchmark_format=", "--benchmark_out_format="}) {
      if (!startsWith(f, name)) continue;
      const std::string value = f.substr(name.size());
      if (value != "console" && value != "json" && value != "csv") {
        usageError(app, name.substr(0, name.size() - 1) + " = '" + value +
                            "' is not one of console, json, csv");
      }
    }
  }
}

// Hands `flags` to Google Benchmark; anything it leaves is an error.
void initializeGoogleBenchmark(const CLI::App& app, const char* argv0,
                               std::vector<std::string> flags) {
  checkBenchmarkFormats(app, flags);
  for (const std::string& f : flags) {
    if (startsWith(f, "--benchmark_out=")) {
      requireWritable(app, "--benchmark_out", f.substr(std::string("--benchmark_out=").size()));
    }
  }
  std::vector<char*> args{const_cast<char*>(argv0)};
  for (auto& f : flags) args.push_back(f.data());
  int count = static_cast<int>(args.size());
  args.push_back(nullptr);
  benchmark::Initialize(&count, args.data());
  if (count > 1) {
    usageError(app, std::string("'") + args[1] +
                        "' is not a Google Benchmark flag or its value is malformed");
  }
}

}  // namespace

void usageError(const CLI::App& app, const std::string& message) {
  std::fprintf(stderr, "%s: error: %s\nRun '%s --help' for the flags.\n", app.get_name().c_str(),
               message.c_str(), app.get_name().c_str());
  std::exit(2);
}

void parseBenchArgs(CLI::App& app, int argc, char** argv, const BenchArgsOptions& options) {
  if (options.googleBenchmark) app.footer(kBenchmarkFlagsHelp);
  std::vector<std::string> own, benchmarkFlags;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (options.googleBenchmark && startsWith(a, "--benchmark_")) {
      benchmarkFlags.push_back(a);
    } else if (startsWith(a, "--") && a.back() == '=') {
      // "--caps=" is an empty value; CLI11 would take the next argument instead.
      own.push_back(a.substr(0, a.size() - 1));
      own.push_back("");
    } else {
      own.push_back(a);
    }
  }
  std::reverse(own.begin(), own.end());  // CLI11 takes them last-first
  try {
    app.parse(own);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints the usage or the error
    std::exit(code == 0 ? 0 : 2);
  }
  if (options.googleBenchmark) initializeGoogleBenchmark(app, argv[0], benchmarkFlags);
#ifdef DISTLAB_BENCH_HAS_BLAS
  // Note [OpenBLAS kernel family]: in the JSON context, and on stderr for the
  // benches whose stdout is a table.
  if (options.googleBenchmark) benchmark::AddCustomContext("blas", blasSummary());
  std::fprintf(stderr, "# %s\n", blasSummary().c_str());
#endif
}

std::vector<int> intList(const CLI::App& app, const std::string& flag, const std::string& text,
                         int lo, int hi) {
  std::vector<int> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    size_t used = 0;
    long v = 0;
    try {
      v = std::stol(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || v < lo || v > hi) {
      usageError(app, flag + " '" + text + "': '" + item + "' is not an integer in [" +
                          std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    out.push_back(static_cast<int>(v));
  }
  if (out.empty()) usageError(app, flag + ": give at least one value");
  return out;
}

std::vector<double> positiveList(const CLI::App& app, const std::string& flag,
                                 const std::string& text, double hi, bool allowEmpty) {
  std::vector<double> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || !std::isfinite(v) || v <= 0 || v > hi) {
      usageError(app, flag + " '" + text + "': '" + item + "' is not a number in (0, " +
                          std::to_string(static_cast<long long>(hi)) + "]");
    }
    out.push_back(v);
  }
  if (out.empty() && !allowEmpty) usageError(app, flag + ": give at least one value");
  return out;
}

void requireWritable(const CLI::App& app, const std::string& flag, const std::string& path) {
  try {
    cli::requireWritableFile(flag, path);
  } catch (const std::exception& e) {
    usageError(app, e.what());
  }
}

}  // namespace distlab::bench
