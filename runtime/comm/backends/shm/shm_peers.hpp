#pragma once
// Liveness of the other ranks of a shm group, from the pids they published in
// the segment. Uses a pidfd per peer (poll() reports exit, also for a zombie
// not yet reaped, and pid reuse cannot fool it); falls back to kill(pid, 0)
// where pidfd_open is unavailable. Ranks that share this process (thread mode)
// are always alive. Thread-safe after construction.
#include <string>
#include <vector>

#include "runtime/comm/backends/shm/shm_segment.hpp"

namespace distlab::comm::shm {

class ShmPeers {
 public:
  explicit ShmPeers(ShmSegment& segment);
  ~ShmPeers();
  ShmPeers(const ShmPeers&) = delete;
  ShmPeers& operator=(const ShmPeers&) = delete;

  bool alive(int rank) const;
  int pid(int rank) const { return pids_[rank]; }
  // The ranks whose process has exited, in one system call for all the peers
  // with a pidfd (an epoll set of them): a wait that polls every peer's
  // liveness would otherwise make n calls per poll, n^2 across the group.
  std::vector<int> exited() const;

 private:
  std::vector<int> pids_;
  std::vector<int> pidfds_;  // -1: use kill(pid, 0); -2: this process
  int epollFd_ = -1;         // every pidfd, its rank as the event's data
};

// Builds the "rank 2 failed: ..." / progress text of the other ranks for error
// messages, from the segment.
std::string describeRank(ShmSegment& segment, int rank);

}  // namespace distlab::comm::shm
