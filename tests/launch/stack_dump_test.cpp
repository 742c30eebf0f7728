// Parsing gdb backtraces: the blocked-in function skips libc/pthread/syscall
// and standard-library frames and prefers the main thread (LWP == pid).
#include "emulator/launcher/stack_dump.hpp"

#include <gtest/gtest.h>

#include "emulator/launcher/output_pump.hpp"

namespace distlab::emulator {
namespace {

constexpr const char* kDump = R"(Thread 2 (Thread 0x7f1 (LWP 501) "progress"):
#0  0x00007f in __futex_abstimed_wait_common () from /lib/x86_64-linux-gnu/libc.so.6
#1  0x00007f in std::condition_variable::wait(std::unique_lock<std::mutex>&) () from /lib/x86_64-linux-gnu/libstdc++.so.6
#2  0x000055 in distlab::comm::ProgressThread::loop (this=0x1) at progress_thread.cpp:40
Thread 1 (Thread 0x7f2 (LWP 500) "train"):
#0  0x00007f in __GI___clock_nanosleep (clock_id=0) at ../sysdeps/clock_nanosleep.c:78
#1  0x00007f in __GI___nanosleep (req=0x7ff) at nanosleep.c:25
#2  0x000055 in std::this_thread::sleep_for<long, std::ratio<1l, 1000l> > (__rtime=...) at /usr/include/c++/12/bits/this_thread_sleep.h:80
#3  distlab::comm::Work::wait (this=0x2, timeout=...) at work.cpp:55
#4  0x000055 in (anonymous namespace)::trainStep (step=3) at train.cpp:12
#5  0x000055 in main (argc=1, argv=0x7ff) at train.cpp:30
)";

TEST(StackDumpTest, BlockedFunctionSkipsPlumbingAndUsesTheMainThread) {
  EXPECT_EQ(blockedFunction(kDump, 500), "distlab::comm::Work::wait");
  // Unknown pid: the first thread listed.
  EXPECT_EQ(blockedFunction(kDump, 999), "distlab::comm::ProgressThread::loop");
  EXPECT_EQ(blockedFunction("", 1), "");
  EXPECT_EQ(blockedFunction("Thread 1 (Thread 0x1 (LWP 7) \"x\"):\n"
                            "#0  0x1 in pause () from /lib/x86_64-linux-gnu/libc.so.6\n"
                            "#1  0x2 in ?? ()\n",
                            7),
            "");
}

TEST(StackDumpTest, ErrorLinesAreRecognised) {
  EXPECT_TRUE(looksLikeError("error: rank 1 exits with code 3"));
  EXPECT_TRUE(looksLikeError("terminate called after throwing an instance of 'X'"));
  EXPECT_TRUE(looksLikeError("DistBackendError: allreduce seq 3 FAILED"));
  EXPECT_FALSE(looksLikeError("step 3 loss 0.25"));
}

}  // namespace
}  // namespace distlab::emulator
