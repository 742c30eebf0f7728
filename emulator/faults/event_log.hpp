#pragma once
// EventLog: one append-only text file per rank in the scenario's result folder
// ("rank<R>.events"). The runner reads these files to time detection (fault
// fired -> first error elsewhere) and to diagnose a desync (which rank issued
// what at which sequence number).
//
// Note [Event log through a shared mapping]
// Lines must survive a SIGKILL of the rank the moment after they were logged,
// and logging runs on every collective of a rank. The file is mapped
// MAP_SHARED and a line is copied into the mapping: the page cache holds it
// as soon as the copy ends, whatever happens to the process, with no system
// call per line (one write(2) per line cost ~4% of a small DDP step). Space
// is reserved with posix_fallocate before it is mapped, so a full disk stops
// the log (lines are dropped, never a SIGBUS); a process that ends normally
// truncates the file to its lines, one killed leaves NUL padding after them,
// which readers skip (a line is text up to '\n'; the padding holds none).
//
// Line format (space separated, first field wall-clock microseconds):
//   <us> op <seq> <OPNAME> <numel> <dtype> <reduce_op|-> <root|-1>
//   <us> fault <kind> seq=<seq> step=<step> <detail>
//   <us> step <step>
// Thread-safe.
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>

namespace distlab::emulator {

class EventLog {
 public:
  // Creates (truncates) `path`. An empty path makes a log that drops lines.
  explicit EventLog(const std::string& path);
  ~EventLog();
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  // Appends "<now_us> <line>\n".
  void write(std::string_view line);

 private:
  // Maps `capacity` bytes (reserved first); false when the space is not there.
  bool mapCapacity(size_t capacity);

  int fd_ = -1;
  std::mutex mutex_;
  char* map_ = nullptr;  // GUARDED_BY(mutex_)
  size_t capacity_ = 0;  // GUARDED_BY(mutex_)
  size_t used_ = 0;      // GUARDED_BY(mutex_)
};

}  // namespace distlab::emulator
