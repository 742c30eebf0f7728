#pragma once
// The calling process's pid without a system call.
//
// getpid() is a system call since glibc 2.25 (~110 ns on the KVM guests
// measured), and the debug layer asks on every monitored operation whether
// it still runs in the process that started its threads (a fork()ed child
// has none). currentPid() reads the pid once and again in every child made
// with fork() (a pthread_atfork handler, registered on the first call).
// A child made with a raw clone() system call would keep its parent's
// value: nothing here does that.
#include <sys/types.h>

namespace distlab {

pid_t currentPid();

}  // namespace distlab
