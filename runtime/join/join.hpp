#pragma once
// The generic Join context for uneven inputs (PyTorch:
// torch.distributed.algorithms.join — Join, Joinable, JoinHook).
//
//   join::Join join({&ddp, &zero}, {.throwOnEarlyTermination = false});
//   for (auto& batch : myBatches) { ...forward, backward, step... }
//   join.exit();   // shadows the peers' iterations until every rank joined
//
// Protocol (Note [Join protocol]): every iteration of a rank that still has
// inputs starts with Join::notifyJoinContext(first joinable): an allreduce of
// ones(1) over the join process group (asynchronous; its sum is the number of
// ranks still training). A rank that ran out of inputs calls exit(): it loops,
// allreducing zeros(1) (matching that vote) and, while the sum is > 0, runs
// every joinable's JoinHook::mainHook() in the given order — each hook issues
// the collectives one iteration of its joinable would issue, so no peer waits
// for a collective that never comes. When the sum is 0 every rank has joined;
// postHook(isLastJoiner) runs once per hook, isLastJoiner being true on the
// ranks that never had to shadow.
//
// throwOnEarlyTermination: a joined rank contributes ones(1) to one more
// allreduce and throws Error("Rank r exhausted all inputs."); the ranks still
// training allreduce zeros(1) right after their vote and, finding a non-zero
// sum, throw Error("Detected at least one rank that exhausted inputs. Throwing
// across all ranks."). Both happen in the same iteration on every rank.
//
// After more than kSkewWarnThreshold shadowed iterations a warning is logged
// once ("Detected uneven input skew of greater than 1000 ...").
//
// Note [Join as a scope]
// Python's `with Join(...)` runs __exit__ at the end of the block; C++ cannot
// do collectives in a destructor safely, so the scope is ended by exit(). The
// destructor, when exit() was not called and no exception is propagating,
// calls exit() itself and lets its error escape (noexcept(false)). When the
// block is left by an exception nothing is shadowed (as in PyTorch: the error
// propagates) and the joinables' configurations are reset. An early-termination
// error ends the scope on every rank: a later exit() or the destructor does
// nothing, so a caller that catches it inside the block does not shadow. Either way the
// joinables are disabled again afterwards, so notifyJoinContext() outside a
// Join is vacuous.
//
// Blocking: exit() blocks until every rank joined; each collective waits at
// most the join process group's timeout, so a dead or hung peer surfaces as
// that collective's error (naming the group, sequence number and ranks).
// Not thread-safe: one Join per rank, used from the training thread.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/comm/process_group.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab::join {

inline constexpr int64_t kSkewWarnThreshold = 1000;

// PyTorch **kwargs forwarded to every joinHook(): named boolean flags
// ("divide_by_initial_world_size"). A joinable ignores the names it does not use.
struct JoinKwargs {
  std::map<std::string, bool> flags;
  bool flag(const std::string& name, bool fallback) const {
    auto it = flags.find(name);
    return it == flags.end() ? fallback : it->second;
  }
};

// What one joinable does for a joined rank.
class JoinHook {
 public:
  virtual ~JoinHook() = default;
  // Shadows one training iteration's collectives; called repeatedly while some
  // rank has not joined.
  virtual void mainHook() {}
  // Once, after every rank joined.
  virtual void postHook(bool isLastJoiner) { (void)isLastJoiner; }
};

class Join;

// Set by Join on each joinable for the lifetime of the context.
struct JoinConfig {
  bool enable = false;
  bool throwOnEarlyTermination = false;
  bool isFirstJoinable = false;
};

class Joinable {
 public:
  virtual ~Joinable() = default;
  virtual std::unique_ptr<JoinHook> joinHook(const JoinKwargs& kwargs) = 0;
  // Device and process group of the join collectives (the first joinable's are used).
  virtual Device joinDevice() const = 0;
  virtual comm::ProcessGroupPtr joinProcessGroup() const = 0;
  const JoinConfig& joinConfig() const { return joinConfig_; }

 private:
  friend class Join;
  JoinConfig joinConfig_;
  Join* context_ = nullptr;  // the enclosing Join, while one is active
};

struct JoinOptions {
  bool enable = true;
  bool throwOnEarlyTermination = false;
  JoinKwargs kwargs;
};

class Join {
 public:
  // ValueError "The join context manager requires at least one joinable" for an
  // empty list (or a null entry), and "Using join context manager with multiple
  // process groups" when the joinables' groups differ. Non-owning: the
  // joinables must outlive the Join. Creates the hooks (joinHook(kwargs)).
  explicit Join(std::vector<Joinable*> joinables, JoinOptions options = {});
  // See Note [Join as a scope].
  ~Join() noexcept(false);
  Join(const Join&) = delete;
  Join& operator=(const Join&) = delete;

  // Ends the scope (Python __exit__): shadows until all ranks joined, then runs
  // the post-hooks. Idempotent. Throws the early-termination Error or a
  // collective's error.
  void exit();

  // The number of iterations this rank shadowed (0 until exit()).
  int64_t shadowedIterations() const { return shadowed_; }

  // Called by a joinable at the start of each iteration's collectives. Returns
  // the async allreduce of the "not joined" vote (its result is the number of
  // ranks still training) for the first joinable of an enabled Join; null
  // otherwise. With throwOnEarlyTermination throws when a peer joined.
  static comm::WorkPtr notifyJoinContext(Joinable& joinable);

 private:
  int64_t countNonJoined();
  [[noreturn]] void notifyToTerminate();
  // Ends the scope without shadowing (early termination, leaving by an error).
  void abandon();

  std::vector<Joinable*> joinables_;
  std::vector<std::unique_ptr<JoinHook>> hooks_;
  JoinOptions options_;
  comm::ProcessGroupPtr group_;
  Device device_;
  int uncaughtAtEntry_ = 0;
  bool exited_ = false;
  int64_t shadowed_ = 0;
};

}  // namespace distlab::join
