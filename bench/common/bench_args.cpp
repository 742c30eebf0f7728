#include "bench/common/bench_args.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <regex>

#include "emulator/cli/usage_checks.hpp"
#include "runtime/tensor/blas_info.hpp"

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

enum class GbKind { kBool, kChoice, kRegex, kSeconds, kCount, kFile, kText };

struct GbFlag {
  const char* name;  // without "--"
  GbKind kind;
  std::vector<std::string> choices{};  // kChoice
};

// Google Benchmark 1.7's flags. It would crash on some values it takes
// (--benchmark_repetitions=-1: std::length_error), print an error and exit 0
// on others (a filter that is no regex), or take '' as the default; so every
// value is checked here first.
const std::vector<GbFlag>& googleBenchmarkFlags() {
  static const std::vector<GbFlag> flags = {
      {"benchmark_list_tests", GbKind::kBool},
      {"benchmark_filter", GbKind::kRegex},
      {"benchmark_min_time", GbKind::kSeconds},
      {"benchmark_min_warmup_time", GbKind::kSeconds},
      {"benchmark_repetitions", GbKind::kCount},
      {"benchmark_enable_random_interleaving", GbKind::kBool},
      {"benchmark_report_aggregates_only", GbKind::kBool},
      {"benchmark_display_aggregates_only", GbKind::kBool},
      {"benchmark_format", GbKind::kChoice, {"console", "json", "csv"}},
      {"benchmark_out", GbKind::kFile},
      {"benchmark_out_format", GbKind::kChoice, {"console", "json", "csv"}},
      {"benchmark_color", GbKind::kChoice, {"auto", "true", "false"}},
      {"benchmark_counters_tabular", GbKind::kBool},
      {"benchmark_time_unit", GbKind::kChoice, {"ns", "us", "ms", "s"}},
      {"benchmark_context", GbKind::kText},
      {"benchmark_perf_counters", GbKind::kText}};
  return flags;
}

// Empty when `value` suits `flag`, else what to give instead.
std::string gbValueProblem(const GbFlag& flag, const std::string& value) {
  switch (flag.kind) {
    case GbKind::kBool:
      return value == "true" || value == "false" ? "" : "give true or false";
    case GbKind::kChoice: {
      std::string all;
      for (const auto& c : flag.choices) {
        if (value == c) return "";
        all += (all.empty() ? "" : ", ") + c;
      }
      return "give one of " + all;
    }
    case GbKind::kRegex:
      try {  // a leading '-' negates the filter
        std::regex(value.substr(!value.empty() && value[0] == '-' ? 1 : 0),
                   std::regex::extended | std::regex::nosubs);
        return value.empty() ? "give a regular expression" : "";
      } catch (const std::regex_error& e) {
        return std::string("not a regular expression (") + e.what() + ")";
      }
    case GbKind::kSeconds: {
      char* end = nullptr;
      const double v = std::strtod(value.c_str(), &end);
      const bool ok = !value.empty() && *end == '\0' && std::isfinite(v) && v > 0 && v <= 1e6;
      return ok ? "" : "give a number of seconds in (0, 1e6]";
    }
    case GbKind::kCount: {
      const bool digits = !value.empty() && value.size() <= 6 &&
                          value.find_first_not_of("0123456789") == std::string::npos;
      return digits && std::stoi(value) >= 1 ? "" : "give a whole number in [1, 999999]";
    }
    case GbKind::kFile:
    case GbKind::kText:
      return value.empty() ? "give a value" : "";
  }
  return "";
}

void checkBenchmarkFlag(const CLI::App& app, const std::string& arg) {
  const size_t eq = arg.find('=');
  const std::string name = arg.substr(2, eq == std::string::npos ? eq : eq - 2);
  for (const GbFlag& flag : googleBenchmarkFlags()) {
    if (name != flag.name) continue;
    if (eq == std::string::npos) {
      if (flag.kind == GbKind::kBool) return;
      usageError(app, "--" + name + " needs a value (--" + name + "=VALUE)");
    }
    const std::string value = arg.substr(eq + 1);
    const std::string problem = gbValueProblem(flag, value);
    if (!problem.empty()) usageError(app, "--" + name + "='" + value + "': " + problem);
    if (flag.kind == GbKind::kFile) requireWritable(app, "--" + name, value);
    return;
  }
  usageError(app, "'" + arg + "' is not a Google Benchmark flag (see --help)");
}

// Hands `flags` to Google Benchmark; anything it leaves is an error.
void initializeGoogleBenchmark(const CLI::App& app, const char* argv0,
                               std::vector<std::string> flags) {
  for (const std::string& f : flags) checkBenchmarkFlag(app, f);
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
  cli::requireExplicitValues(app);  // Note [One reader for command lines]
  try {
    app.parse(own);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints the usage or the error
    std::exit(code == 0 ? 0 : 2);
  }
  if (options.googleBenchmark) initializeGoogleBenchmark(app, argv[0], benchmarkFlags);
  // Note [OpenBLAS kernel family]: in the JSON context, and on stderr for the
  // benches whose stdout is a table.
  if (options.googleBenchmark) benchmark::AddCustomContext("blas", blasSummary());
  std::fprintf(stderr, "# %s\n", blasSummary().c_str());
}

namespace {

// splitCommaList, with its ValueError turned into a usage error.
std::vector<std::string> listItems(const CLI::App& app, const std::string& flag,
                                   const std::string& text, bool allowEmpty) {
  try {
    return cli::splitCommaList(flag, text, allowEmpty);
  } catch (const std::exception& e) {
    usageError(app, e.what());
  }
}

}  // namespace

std::vector<int> intList(const CLI::App& app, const std::string& flag, const std::string& text,
                         int lo, int hi) {
  std::vector<int> out;
  for (const std::string& item : listItems(app, flag, text, false)) {
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
  return out;
}

std::vector<double> positiveList(const CLI::App& app, const std::string& flag,
                                 const std::string& text, double hi, bool allowEmpty) {
  std::vector<double> out;
  for (const std::string& item : listItems(app, flag, text, allowEmpty)) {
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
  return out;
}

void requireReadable(const CLI::App& app, const std::string& flag, const std::string& path) {
  try {
    cli::requireReadableFile(flag, path);
  } catch (const std::exception& e) {
    usageError(app, e.what());
  }
}

void requireWritable(const CLI::App& app, const std::string& flag, const std::string& path) {
  try {
    cli::requireWritableFile(flag, path);
  } catch (const std::exception& e) {
    usageError(app, e.what());
  }
}

}  // namespace distlab::bench
