#pragma once
// Monotonic time helpers. Every blocking call in distlab takes a deadline
// (docs/DESIGN.md, "Asynchrony": nothing ever waits without a deadline);
// `Deadline` is how a timeout travels through nested waits without being
// restarted at each level.
#include <chrono>
#include <cstdint>

namespace distlab {

using Clock = std::chrono::steady_clock;
using Milliseconds = std::chrono::milliseconds;

// Nanoseconds since an arbitrary fixed point (steady, never goes backwards).
inline int64_t monotonicNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             Clock::now().time_since_epoch())
      .count();
}

// Microseconds since the Unix epoch (wall clock), for log lines and traces.
int64_t wallClockNowUs();

// A point in time after which a blocking call gives up. Copyable, cheap.
class Deadline {
 public:
  // A deadline `timeout` from now. A negative or zero timeout is already expired.
  static Deadline after(Milliseconds timeout) { return Deadline(Clock::now() + timeout); }
  // `timeout` after `startNs`, a monotonicNowNs() reading taken earlier (a
  // deadline timed from an operation's start without reading the clock again).
  static Deadline afterStart(int64_t startNs, Milliseconds timeout) {
    return Deadline(Clock::time_point(std::chrono::duration_cast<Clock::duration>(
                        std::chrono::nanoseconds(startNs))) +
                    timeout);
  }
  explicit Deadline(Clock::time_point at) : at_(at) {}

  Clock::time_point at() const { return at_; }
  bool expired() const { return Clock::now() >= at_; }
  // Time left, clamped at zero.
  Milliseconds remaining() const {
    auto left = std::chrono::duration_cast<Milliseconds>(at_ - Clock::now());
    return left.count() > 0 ? left : Milliseconds(0);
  }

 private:
  Clock::time_point at_;
};

// `seconds` as whole milliseconds, truncated. Callers pass validated, bounded
// durations (scenario timeouts, deadlines); this is a unit change, not a check.
inline Milliseconds millisecondsFromSeconds(double seconds) {
  return Milliseconds(static_cast<int64_t>(seconds * 1000));
}

// Measures elapsed time from construction (or the last reset).
class Stopwatch {
 public:
  Stopwatch() : start_(Clock::now()) {}
  void reset() { start_ = Clock::now(); }
  double elapsedSeconds() const {
    return std::chrono::duration<double>(Clock::now() - start_).count();
  }
  Milliseconds elapsed() const {
    return std::chrono::duration_cast<Milliseconds>(Clock::now() - start_);
  }

 private:
  Clock::time_point start_;
};

}  // namespace distlab
