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

 private:
  std::vector<int> pids_;
  std::vector<int> pidfds_;  // -1: use kill(pid, 0); -2: this process
};

// Builds the "rank 2 failed: ..." / progress text of the other ranks for error
// messages, from the segment.
std::string describeRank(ShmSegment& segment, int rank);

}  // namespace distlab::comm::shm
