#pragma once
// Rendezvous: turns an init method (URL) or an explicit store into the
// {store, rank, worldSize} a process group is built on (PyTorch
// init_process_group's init_method / store / rank / world_size;
// docs/pytorch-semantics.md, "Initialization"). initProcessGroup calls this.
//
//   env://                   RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT from the
//                            environment (explicit rank/worldSize win). Rank 0
//                            hosts the TCPStore server on MASTER_PORT and waits
//                            for all worldSize ranks to connect.
//   tcp://host:port          rank and worldSize required (arguments or
//                            ?rank=R&world_size=N); rank 0 hosts the server.
//   file:///path/to/file     FileStore on that file; rank and worldSize
//                            required. Use a fresh (absent or empty) file each job.
//
// With DISTLAB_STORE_EXTERNAL=1 in the environment (the launcher sets it) a
// server already runs at MASTER_ADDR:MASTER_PORT (or the tcp:// address), so
// rank 0 connects as a client too. With DISTLAB_STORE_PREFIX=p (the launcher
// sets it per restart round) env:// returns PrefixStore(p, store), so a
// restarted group never sees the keys of an earlier round.
//
// Note [Ranks released together]
// A launcher starts ranks one after another, and on a small machine a
// thousand of them take tens of seconds to start (reports/scale.md). The
// first ranks would spend that in the rendezvous and the shm segment's attach,
// which are bounded by the group's timeout: the launcher's start-up rate, not
// the group, would decide whether the group forms. So the launcher hands every
// rank the read end of one pipe (DISTLAB_LAUNCH_RELEASE_FD) and closes the
// write end once all are started; env:// waits for that end of file first
// (once per process, up to kLaunchReleaseWait, like torchrun's rendezvous
// timeout), then rendezvouses with the group's timeout. A launcher that dies
// closes the pipe too, and its ranks die with it (PR_SET_PDEATHSIG).
// These variables come from RendezvousOptions::env (initProcessGroup passes its
// read); when it is unset, env:// and tcp:// read the environment through the
// one reader, readRuntimeEnv() (Note [Environment read once] in
// runtime/core/runtime_env.hpp), and fail on any bad variable it reports.
//
// Errors: bad or missing input is a ValueError naming the variable, URL part or
// argument; a server that cannot be reached is a DistNetworkError; workers that
// do not all arrive before `timeout` is a DistStoreError. Blocks until the
// store is reachable (and, for the hosting rank, every rank has connected).
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "runtime/comm/store/store.hpp"
#include "runtime/core/runtime_env.hpp"

namespace distlab::comm {

struct RendezvousOptions {
  std::string initMethod;          // empty: "env://" unless `store` is given
  std::shared_ptr<Store> store;    // explicit store; excludes initMethod
  int rank = -1;                   // -1: from the URL or the environment
  int worldSize = -1;              // -1: from the URL or the environment
  std::chrono::milliseconds timeout = Store::kDefaultTimeout;
  std::optional<RuntimeEnv> env;   // unset: read when the method needs it
};

struct RendezvousResult {
  std::shared_ptr<Store> store;
  int rank = -1;
  int worldSize = -1;
};

RendezvousResult rendezvous(const RendezvousOptions& options);

// Note [Ranks released together]: how long env:// waits for the launcher.
inline constexpr std::chrono::seconds kLaunchReleaseWait{900};
// Waits until the pipe `fd` reaches end of file (its writer, the launcher,
// closed it), then closes it; the first call in a process waits, later ones
// return at once. DistStoreError after `limit`; ValueError when `fd` is not
// an open descriptor (naming DISTLAB_LAUNCH_RELEASE_FD).
void awaitLaunchRelease(int fd, std::chrono::milliseconds limit);

// A parsed init URL: scheme ("env", "tcp", "file"), the part after "://"
// without the query, and the query parameters. Throws ValueError.
struct InitMethod {
  std::string scheme;
  std::string location;
  std::map<std::string, std::string> query;
};
InitMethod parseInitMethod(const std::string& url);

}  // namespace distlab::comm
