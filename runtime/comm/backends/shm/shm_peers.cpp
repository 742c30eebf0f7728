#include "runtime/comm/backends/shm/shm_peers.hpp"

#include <poll.h>
#include <sys/epoll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "runtime/comm/types.hpp"

namespace distlab::comm::shm {

ShmPeers::ShmPeers(ShmSegment& segment) {
  const int self = getpid();
  epollFd_ = epoll_create1(EPOLL_CLOEXEC);  // -1: exited() asks each peer
  for (int r = 0; r < segment.size(); ++r) {
    const int pid = segment.control(r).pid.load(std::memory_order_acquire);
    pids_.push_back(pid);
    if (pid == self) {
      pidfds_.push_back(-2);
      continue;
    }
#ifdef SYS_pidfd_open
    const int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
    const int fd = -1;
#endif
    pidfds_.push_back(fd >= 0 ? fd : -1);
    if (fd >= 0 && epollFd_ >= 0) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u32 = static_cast<uint32_t>(r);
      if (epoll_ctl(epollFd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
        close(epollFd_);
        epollFd_ = -1;
      }
    }
  }
}

ShmPeers::~ShmPeers() {
  if (epollFd_ >= 0) close(epollFd_);
  for (int fd : pidfds_) {
    if (fd >= 0) close(fd);
  }
}

bool ShmPeers::alive(int rank) const {
  const int fd = pidfds_[rank];
  if (fd == -2) return true;
  if (fd >= 0) {
    pollfd p{fd, POLLIN, 0};
    return poll(&p, 1, 0) == 0;  // readable once the process has exited
  }
  return kill(pids_[rank], 0) == 0 || errno == EPERM;
}

std::vector<int> ShmPeers::exited() const {
  std::vector<int> out;
  if (epollFd_ < 0) {
    for (int r = 0; r < static_cast<int>(pids_.size()); ++r) {
      if (!alive(r)) out.push_back(r);
    }
    return out;
  }
  for (int r = 0; r < static_cast<int>(pids_.size()); ++r) {
    if (pidfds_[r] == -1 && !alive(r)) out.push_back(r);  // no pidfd: kill(pid, 0)
  }
  epoll_event events[64];
  const int n = epoll_wait(epollFd_, events, 64, 0);  // level-triggered: every exited one
  for (int i = 0; i < n; ++i) out.push_back(static_cast<int>(events[i].data.u32));
  return out;
}

std::string describeRank(ShmSegment& segment, int rank) {
  RankControl& c = segment.control(rank);
  if (c.seq.load(std::memory_order_acquire) == 0) {
    return fmt::format("rank {} has not started a collective yet", rank);
  }
  return fmt::format("rank {} is at seq {} ({}), step {}", rank,
                     c.seq.load(std::memory_order_acquire),
                     opTypeName(static_cast<OpType>(c.opType.load(std::memory_order_acquire))),
                     c.step.load(std::memory_order_acquire));
}

}  // namespace distlab::comm::shm
