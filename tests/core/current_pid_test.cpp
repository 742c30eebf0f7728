// currentPid() is getpid() without the system call, in the parent and in a
// fork()ed child (which must not keep its parent's cached value).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/core/current_pid.hpp"

namespace distlab {
namespace {

TEST(CurrentPidTest, IsThisProcessPid) {
  EXPECT_EQ(currentPid(), ::getpid());
  EXPECT_EQ(currentPid(), ::getpid());  // the cached read
}

TEST(CurrentPidTest, AForkedChildSeesItsOwnPid) {
  ASSERT_EQ(currentPid(), ::getpid());  // cached in the parent before the fork
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Only async-signal-safe calls in the child; the exit status is the verdict.
    const bool own = currentPid() == ::getpid() && currentPid() != ::getppid();
    ::_exit(own ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child read its parent's pid";
  EXPECT_EQ(currentPid(), ::getpid());
}

}  // namespace
}  // namespace distlab
