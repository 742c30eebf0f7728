#pragma once
// The watchdog side of ExitGuard (Note [Exit guard]); internal.
//
// Protocol on the command pipe: one line per record, "<op><kind><payload>\n"
// with op '+' (register) or '-' (forget) and kind 'G' (process group id),
// 'P' (pid whose shm segments to sweep) or 'D' (path to remove); "XX\n" asks
// the watchdog to clean up now and exit. Every record is written with one
// write() of at most PIPE_BUF bytes, so records from several threads (or
// forked children) never interleave.
#include <sys/types.h>

namespace distlab::emulator::detail {

inline constexpr size_t kMaxGuardRecord = 4000;  // < PIPE_BUF

// Runs in the forked watchdog: never returns. `commandFd` is the read end of
// the command pipe, `parent` the process to outlive.
[[noreturn]] void runExitWatchdog(pid_t parent, int commandFd);

}  // namespace distlab::emulator::detail
