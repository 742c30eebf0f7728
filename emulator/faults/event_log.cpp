#include "emulator/faults/event_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include "runtime/core/clock.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::emulator {

EventLog::EventLog(const std::string& path) {
  if (path.empty()) return;
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("cannot create event log " + path);
}

EventLog::~EventLog() {
  if (fd_ >= 0) ::close(fd_);
}

void EventLog::write(const std::string& line) {
  if (fd_ < 0) return;
  std::string full = std::to_string(wallClockNowUs()) + " " + line + "\n";
  std::lock_guard<std::mutex> lock(mutex_);
  ssize_t done = 0;
  while (done < static_cast<ssize_t>(full.size())) {
    ssize_t n = ::write(fd_, full.data() + done, full.size() - done);
    if (n <= 0) return;  // best effort: a full disk must not turn into a second fault
    done += n;
  }
}

}  // namespace distlab::emulator
