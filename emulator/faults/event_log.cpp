#include "emulator/faults/event_log.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <iterator>

#include <fmt/format.h>

#include "runtime/core/clock.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::emulator {
namespace {

// ~1,000 lines, doubled as needed: a thousand ranks each reserving 1 MiB
// up front wrote a gigabyte of padding for logs of a few lines.
constexpr size_t kInitialCapacity = size_t{64} << 10;

}  // namespace

EventLog::EventLog(const std::string& path) {
  if (path.empty()) return;
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("cannot create event log " + path);
  if (!mapCapacity(kInitialCapacity)) {
    ::close(fd_);
    fd_ = -1;
    throw Error("cannot reserve space for the event log " + path + " (is the disk full?)");
  }
}

EventLog::~EventLog() {
  if (fd_ < 0) return;
  if (map_) ::munmap(map_, capacity_);
  if (::ftruncate(fd_, static_cast<off_t>(used_)) != 0) {
    // The NUL padding stays; readers skip it (Note [Event log through a shared mapping]).
  }
  ::close(fd_);
}

bool EventLog::mapCapacity(size_t capacity) {
  if (::posix_fallocate(fd_, 0, static_cast<off_t>(capacity)) != 0) return false;
  void* fresh = ::mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (fresh == MAP_FAILED) return false;
  if (map_) ::munmap(map_, capacity_);
  map_ = static_cast<char*>(fresh);
  capacity_ = capacity;
  return true;
}

void EventLog::write(std::string_view line) {
  if (fd_ < 0) return;
  // Formatted on the stack: a line is logged on every operation of a rank.
  fmt::memory_buffer full;
  fmt::format_to(std::back_inserter(full), "{} {}\n", wallClockNowUs(), line);
  std::lock_guard<std::mutex> lock(mutex_);
  if (!map_) return;  // out of space earlier: best effort, never a second fault
  if (used_ + full.size() > capacity_) {
    size_t next = capacity_;
    while (used_ + full.size() > next) next *= 2;
    if (!mapCapacity(next)) {
      ::munmap(map_, capacity_);
      map_ = nullptr;
      return;
    }
  }
  std::memcpy(map_ + used_, full.data(), full.size());
  used_ += full.size();
}

}  // namespace distlab::emulator
