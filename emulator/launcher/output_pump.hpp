#pragma once
// OutputPump: reads every rank's stdout/stderr pipes on the launcher thread,
// splits them into lines, hands each line to a sink (the launcher prefixes it
// with "[rank N]:"), tees it into the rank's log file, and remembers the first
// line that looks like an error for the failure summary. Not thread-safe.
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace distlab::emulator {

using LineSink = std::function<void(int rank, bool isStderr, const std::string& line)>;

class OutputPump {
 public:
  explicit OutputPump(LineSink sink) : sink_(std::move(sink)) {}
  ~OutputPump();
  OutputPump(const OutputPump&) = delete;
  OutputPump& operator=(const OutputPump&) = delete;

  // Takes ownership of the two read ends; `logPath` (may be empty) receives
  // the rank's raw lines.
  void addRank(int rank, int stdoutFd, int stderrFd, const std::string& logPath);
  // Waits up to `wait` for output (or for `wakeFd` to become readable, when
  // >= 0) and handles whatever arrived.
  void pumpOnce(std::chrono::milliseconds wait, int wakeFd = -1);
  // Reads what is left until every pipe is at EOF or `limit` passes (a
  // grandchild may hold a pipe open), then closes all pipes.
  void drain(std::chrono::milliseconds limit);
  // The first line of `rank` that looks like an error (see the .cpp), else
  // its first stderr line, else "".
  std::string firstErrorLine(int rank) const;

 private:
  struct Stream {
    int rank = 0;
    bool isStderr = false;
    int fd = -1;
    std::string partial;
  };
  struct RankLog {
    std::FILE* file = nullptr;
    std::string firstError;
    std::string firstStderr;
  };

  void readStream(Stream& s);
  void emit(Stream& s, const std::string& line);

  LineSink sink_;
  std::vector<Stream> streams_;
  std::map<int, RankLog> logs_;
};

// Whether a line looks like an error report ("error", "exception", "fatal",
// "terminate called", "what():", "abort", "failed", any case).
bool looksLikeError(const std::string& line);

}  // namespace distlab::emulator
