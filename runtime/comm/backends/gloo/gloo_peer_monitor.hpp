#pragma once
// PeerMonitor: notices a dead peer while an operation runs, names it, and
// interrupts the blocked Gloo operation so it fails within its timeout
// instead of at it.
//
// Note [Gloo peer failure]
// Gloo reports a closed connection only to operations waiting on that very
// connection: with rank 2 dead, rank 0 blocked on a receive from rank 3 (which
// waits on 2) would sit until its timeout and then blame nobody. So:
//  - Each backend runs one monitor thread. While an operation is in flight it
//    looks at every TCP pair (every ~20 ms) for a connection Gloo marked broken.
//  - A broken connection to peer q is judged through the group's store: a rank
//    that fails, aborts or shuts down writes `<prefix>gloo/down/<rank>` with its
//    reason BEFORE its connections close. A record means "q gave up: reason";
//    no record after a grace period (300 ms) means "q died". Because the record
//    precedes the close, a rank that only closed in reaction to another's death
//    (a cascade) is never blamed: its record names the real culprit.
//  - A graceful shutdown record does not interrupt anything (the peer finished
//    its part; Gloo fails an operation that still needs it by itself). A death
//    or a failure record does: the monitor writes its own record, then signals
//    every pair of every context, which wakes the Gloo operation with an
//    exception; the backend turns that into DistPeerFailureError (death) or
//    DistNetworkError (peer failure) naming the peer.
// Gloo keeps a pair's state (and its socket) private, and the Debian package
// lacks the headers of its TCP internals, so the monitor works from outside:
// at start it finds each pair's socket in this process's descriptor table by
// the pair's local address (transport::tcp::Address, public). Gloo closes a
// pair's socket when the connection breaks, so "the descriptor no longer has
// that local address" means broken. To interrupt, the monitor shuts those
// sockets down (shutdown(2)); Gloo's event loop then sees end-of-file and fails
// every pending operation on the pair, exactly as for a real peer loss, and the
// waits Gloo would not fail are woken through gloo_tracking.hpp.
// If the store itself is gone (its host died), judging falls back to "died".
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <sys/socket.h>

#include <gloo/context.h>

#include "runtime/comm/backend.hpp"
#include "runtime/comm/backends/gloo/gloo_tracking.hpp"
#include "runtime/comm/store/store.hpp"
#include "runtime/core/clock.hpp"

namespace distlab::comm::gloo_backend {

enum class PeerState { kAlive, kDied, kFailed, kShutdown };

struct PeerVerdict {
  int peer = -1;  // group rank
  PeerState state = PeerState::kAlive;
  std::string text;  // "peer rank 2 (global rank 2) died: ..." etc.
  // kFailed because an operation timed out there (its record's kind is
  // "timeout", its own or carried on by a cascade): Note [A peer's timeout is
  // a timeout] in runtime/comm/backend.hpp.
  bool timedOut = false;
};

// Store record texts (Note [Gloo peer failure]): "shutdown:<why>" and
// "failed:<kind>:<why>", kind as failureKindName() spells it.
std::string shutdownRecord(const std::string& why);
std::string failedRecord(FailureReason::Kind kind, const std::string& why);

class PeerMonitor {
 public:
  struct Config {
    std::shared_ptr<comm::Store> store;
    std::string recordPrefix;  // "<storePrefix>gloo/down/"
    int rank = 0;
    std::vector<int> globalRanks;
    std::string groupName;
    Milliseconds grace{300};
    std::shared_ptr<BufferRegistry> buffers;  // every Gloo buffer of the group
  };

  explicit PeerMonitor(Config config);
  ~PeerMonitor();  // stop()
  PeerMonitor(const PeerMonitor&) = delete;
  PeerMonitor& operator=(const PeerMonitor&) = delete;

  // The contexts to watch (set once, before start()).
  void watch(std::vector<std::shared_ptr<::gloo::Context>> contexts);
  void start();
  void stop();

  // In-flight operation count: the monitor only acts while it is > 0.
  void opBegin();
  void opEnd();

  // Peers whose connection Gloo marked broken (any context), ascending.
  std::vector<int> brokenPeers() const;
  // Judges every broken peer and returns the most telling verdict (a death
  // before a failure record before a shutdown); nullopt when none is broken.
  std::optional<PeerVerdict> judgeBroken(Milliseconds grace) const;
  // Judges peer q (see the Note); waits up to `grace` for its record.
  PeerVerdict judge(int peer, Milliseconds grace) const;
  // The verdict that made the monitor interrupt, if it did.
  std::optional<PeerVerdict> verdict() const;

  // Writes this rank's record (first call wins; never throws).
  void publish(const std::string& reason);
  // Fails every pending Gloo operation of every watched context and closes the
  // connections (peers see them close); keeps waking waits (gloo_tracking.hpp)
  // while operations are in flight.
  void interrupt();
  bool interrupted() const { return interrupted_.load(); }
  // Number of pair sockets found by watch() (tests; 0 when none could be found).
  size_t watchedSockets() const { return watched_.size(); }

 private:
  struct Watched {
    int peer = -1;
    int fd = -1;
    sockaddr_storage local{};
  };
  void loop();
  std::string peerName(int peer) const;
  bool alive(const Watched& w) const;

  Config config_;
  std::vector<std::shared_ptr<::gloo::Context>> contexts_;
  std::vector<Watched> watched_;
  std::atomic<int> inFlight_{0};
  std::atomic<bool> published_{false};
  std::atomic<bool> interrupted_{false};
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool stopping_ = false;                 // GUARDED_BY(mutex_)
  std::optional<PeerVerdict> verdict_;    // GUARDED_BY(mutex_)
  std::thread thread_;
};

}  // namespace distlab::comm::gloo_backend
