#pragma once
// EventLog: one append-only text file per rank in the scenario's result folder
// ("rank<R>.events"), written with one write(2) per line so lines survive a
// SIGKILL of the rank the moment after they were logged. The runner reads
// these files to time detection (fault fired -> first error elsewhere) and to
// diagnose a desync (which rank issued what at which sequence number).
//
// Line format (space separated, first field wall-clock microseconds):
//   <us> op <seq> <OPNAME> <numel> <dtype> <reduce_op|-> <root|-1>
//   <us> fault <kind> seq=<seq> step=<step> <detail>
//   <us> step <step>
// Thread-safe.
#include <memory>
#include <mutex>
#include <string>

namespace distlab::emulator {

class EventLog {
 public:
  // Creates (truncates) `path`. An empty path makes a log that drops lines.
  explicit EventLog(const std::string& path);
  ~EventLog();
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  // Appends "<now_us> <line>\n".
  void write(const std::string& line);

 private:
  int fd_ = -1;
  std::mutex mutex_;
};

}  // namespace distlab::emulator
