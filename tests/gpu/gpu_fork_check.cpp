#include "tests/gpu/gpu_fork_check.hpp"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "runtime/tensor/cuda/cuda_runtime.hpp"

namespace distlab::gputest {
namespace {

constexpr int kProbeTimeoutMs = 60000;  // driver start-up on a cold machine

// Runs in the child: writes the reason (empty when usable) and exits.
[[noreturn]] void probe(int fd) {
  const std::string reason = cuda::isAvailable() ? "" : cuda::unavailableReason();
  ssize_t ignored = ::write(fd, reason.data(), reason.size());
  (void)ignored;
  ::_exit(0);
}

std::string readReason(int fd, pid_t child) {
  std::string reason;
  char buf[512];
  pollfd p{fd, POLLIN, 0};
  while (::poll(&p, 1, kProbeTimeoutMs) > 0) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    reason.append(buf, static_cast<size_t>(n));
  }
  ::kill(child, SIGKILL);  // no-op when it already exited; ends a hung probe
  int status = 0;
  ::waitpid(child, &status, 0);
  if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL) {
    return "no CUDA device: the probe process died of signal " +
           std::to_string(WTERMSIG(status));
  }
  return reason;
}

std::string ask() {
  int fds[2];
  if (::pipe(fds) != 0) return std::string("no CUDA device: pipe failed: ") + std::strerror(errno);
  const pid_t child = ::fork();
  if (child < 0) return std::string("no CUDA device: fork failed: ") + std::strerror(errno);
  if (child == 0) {
    ::close(fds[0]);
    probe(fds[1]);
  }
  ::close(fds[1]);
  std::string reason = readReason(fds[0], child);
  ::close(fds[0]);
  return reason;
}

}  // namespace

std::string cudaUnavailableReasonInChild() {
  static const std::string reason = ask();
  return reason;
}

}  // namespace distlab::gputest
