// A tiny rank program for the launcher tests; behaves per flag:
//   --print N                 print N stdout lines and one stderr line
//   --check-env               print the launcher's variables on one line
//   --exit-code-on-rank K:C   rank K prints an error and exits with C; others wait
//   --sigkill-on-rank K       rank K SIGKILLs itself; others wait
//   --hang-on-rank K          rank K hangs in distlab_test_hang_in_collective,
//                             others in distlab_test_wait_for_peers
//   --fail-until-restart N    rank 0 fails while TORCHELASTIC_RESTART_COUNT < N
//   --fail-on-node-rank K:G   rank K fails when GROUP_RANK == G; others wait
//   --pidfile DIR             write DIR/rank_<R>.pid, then wait forever
//   --ignore-sigterm          ignore SIGTERM (tests SIGKILL escalation)
//   --rendezvous              env:// rendezvous, exchange a sum through the store
//   --barrier                 env:// rendezvous, then wait until every rank got here
//   --grandchild DIR          fork a child that writes DIR/grandchild_<R>.pid and
//                             waits forever (it has no death signal of its own)
//   --wait-for-file PATH      wait until PATH exists, print "rank R released", exit 0
// "Wait" means pause() in a loop, i.e. until a signal ends the process.
#include <signal.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "runtime/comm/store/rendezvous.hpp"
#include "runtime/core/env.hpp"

extern "C" __attribute__((noinline)) void distlab_test_hang_in_collective() {
  while (true) ::pause();
}

extern "C" __attribute__((noinline)) void distlab_test_wait_for_peers() {
  while (true) ::pause();
}

namespace {

int envInt(const char* name) { return static_cast<int>(distlab::env::requireInt(name, 0, 1 << 30)); }

void printEnv() {
  std::string line = "env";
  for (const char* name : {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                           "MASTER_ADDR", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT",
                           "DISTLAB_STORE_EXTERNAL", "DISTLAB_STORE_PREFIX"}) {
    line += std::string(" ") + name + "=" + distlab::env::getString(name).value_or("<unset>");
  }
  std::printf("%s port_set=%d\n", line.c_str(), envInt("MASTER_PORT") > 0 ? 1 : 0);
}

int rendezvousSum(int rank) {
  auto r = distlab::comm::rendezvous({.timeout = std::chrono::milliseconds(20000)});
  auto& store = *r.store;
  store.add("sum", rank + 1);
  if (store.add("arrived", 1) == r.worldSize) store.setString("all-arrived", "1");
  store.wait({"all-arrived"});
  int64_t sum = store.add("sum", 0);
  std::printf("rank %d of %d sees sum=%lld\n", r.rank, r.worldSize, static_cast<long long>(sum));
  // Leave together so nobody's last request races the store's shutdown.
  if (store.add("left", 1) == r.worldSize) store.setString("all-left", "1");
  store.wait({"all-left"});
  return 0;
}

void barrier() {
  static distlab::comm::RendezvousResult r;  // kept: the connection outlives the barrier
  r = distlab::comm::rendezvous({.timeout = std::chrono::milliseconds(20000)});
  if (r.store->add("barrier", 1) == r.worldSize) r.store->setString("barrier-done", "1");
  r.store->wait({"barrier-done"});
}

bool parsePair(const char* text, int* a, int* b) { return std::sscanf(text, "%d:%d", a, b) == 2; }

// Writes `text` to `path` complete or not at all (a reader waits for the name).
void publish(const std::string& path, const std::string& text) {
  std::ofstream(path + ".part") << text;
  std::rename((path + ".part").c_str(), path.c_str());
}

void startGrandchild(const std::string& dir, int rank) {
  pid_t pid = ::fork();
  if (pid != 0) return;
  publish(dir + "/grandchild_" + std::to_string(rank) + ".pid", std::to_string(::getpid()));
  while (true) ::pause();
}

void waitForFile(const std::string& path) {
  std::string dir = path.substr(0, path.rfind('/'));
  int fd = ::inotify_init1(IN_CLOEXEC);
  ::inotify_add_watch(fd, dir.c_str(), IN_CREATE | IN_MOVED_TO);
  char events[4096];
  while (::access(path.c_str(), F_OK) != 0) {
    if (::read(fd, events, sizeof(events)) < 0 && errno != EINTR) break;
  }
  ::close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  int rank = envInt("RANK");
  bool wait = false;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : "";
    int k = -1, c = 0;
    if (flag == "--print") {
      int n = std::atoi(value);
      for (int j = 0; j < n; ++j) std::printf("line %d from rank %d\n", j, rank);
      std::fflush(stdout);
      std::fprintf(stderr, "stderr line from rank %d\n", rank);
    } else if (flag == "--check-env") {
      printEnv();
    } else if (flag == "--exit-code-on-rank" && parsePair(value, &k, &c)) {
      if (rank == k) {
        std::fprintf(stderr, "progress note\nerror: rank %d exits with code %d\n", rank, c);
        return c;
      }
      wait = true;
    } else if (flag == "--sigkill-on-rank") {
      if (rank == std::atoi(value)) ::kill(::getpid(), SIGKILL);
      wait = true;
    } else if (flag == "--hang-on-rank") {
      std::fflush(stdout);
      if (rank == std::atoi(value)) distlab_test_hang_in_collective();
      distlab_test_wait_for_peers();
    } else if (flag == "--fail-until-restart") {
      if (rank == 0 && envInt("TORCHELASTIC_RESTART_COUNT") < std::atoi(value)) {
        std::fprintf(stderr, "error: attempt %d fails on purpose\n",
                     envInt("TORCHELASTIC_RESTART_COUNT"));
        return 1;
      }
      std::printf("rank %d ok in attempt %d\n", rank, envInt("TORCHELASTIC_RESTART_COUNT"));
    } else if (flag == "--fail-on-node-rank" && parsePair(value, &k, &c)) {
      if (rank == k && envInt("GROUP_RANK") == c) {
        std::fprintf(stderr, "error: rank %d on node %d fails\n", rank, c);
        return 5;
      }
      wait = true;
    } else if (flag == "--pidfile") {
      std::ofstream(std::string(value) + "/rank_" + std::to_string(rank) + ".pid") << ::getpid();
      wait = true;
    } else if (flag == "--grandchild") {
      startGrandchild(value, rank);
    } else if (flag == "--wait-for-file") {
      waitForFile(value);
      std::printf("rank %d released\n", rank);
      return 0;
    } else if (flag == "--ignore-sigterm") {
      ::signal(SIGTERM, SIG_IGN);
    } else if (flag == "--barrier") {
      barrier();
    } else if (flag == "--rendezvous") {
      rendezvousSum(rank);
    }
  }
  std::fflush(stdout);
  if (wait) distlab_test_wait_for_peers();
  return 0;
}
