#pragma once
// Stack dumps of live ranks for --timeout: every thread of a process,
// symbolised by gdb (`gdb -batch -p PID -ex "thread apply all bt"`), and the
// function the main thread is blocked in.
#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace distlab::emulator {

// gdb's output for each of `pids` (all threads), or a line saying why there
// is none (gdb missing, attach refused, `limit` passed). The gdb processes run
// in parallel, so the whole dump takes about as long as one. Never throws.
std::vector<std::string> dumpStacks(const std::vector<pid_t>& pids,
                                    std::chrono::milliseconds limit);

// The first frame of thread `pid`'s backtrace (the main thread; the first
// thread listed when `pid` is not found) that is not libc/pthread/syscall or
// standard-library plumbing (pause, nanosleep, poll, futex waits,
// std::this_thread::sleep_for, ...). "" when there is none.
std::string blockedFunction(const std::string& gdbOutput, pid_t pid);

}  // namespace distlab::emulator
