// Running a peer implementation of the collectives benchmark (peer_bench.hpp).
#include "emulator/bench/peer_bench.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "emulator/launcher/child_process.hpp"
#include "emulator/launcher/exit_guard.hpp"
#include "emulator/launcher/output_pump.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/runtime_env.hpp"

namespace distlab::emulator {
namespace fs = std::filesystem;

const std::vector<std::string> kBenchPeers = {"mpi", "torch-gloo"};

namespace {

// The folder of the running `distlab`: the peer programs are built beside it.
fs::path selfDir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error("bench: cannot find the distlab executable (/proc/self/exe)");
  return exe.parent_path();
}

bool onPath(const std::string& program) {
  // PATH through the one reader (runtime/core/runtime_env.hpp).
  std::stringstream dirs(readRuntimeEnv().path.value_or("/usr/bin:/bin"));
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (!dir.empty() && ::access((fs::path(dir) / program).c_str(), X_OK) == 0) return true;
  }
  return false;
}

fs::path mpiPeerProgram() { return selfDir() / "distlab_mpi_peer"; }
fs::path torchPeerScript() { return selfDir() / "distlab_torch_gloo_peer.py"; }
const char* kPython = "/usr/bin/python3";

std::vector<std::string> peerArgv(const std::string& peer, const CollectivesBenchOptions& o,
                                  const std::string& out) {
  std::vector<std::string> argv;
  if (peer == "mpi") {
    // --oversubscribe: more ranks than cores is how world 4 runs here; no
    // binding, like distlab's forked ranks.
    argv = {"mpirun", "-np", std::to_string(o.worldSize), "--oversubscribe", "--bind-to", "none",
            mpiPeerProgram().string()};
  } else {
    argv = {kPython, torchPeerScript().string(), "--world-size", std::to_string(o.worldSize)};
  }
  for (const auto& a : std::vector<std::string>{
           "--ops", fmt::format("{}", fmt::join(o.ops, ",")), "--min-bytes",
           std::to_string(o.minBytes), "--max-bytes", std::to_string(o.maxBytes), "--iters",
           std::to_string(o.iters), "--warmup", std::to_string(o.warmup), "--out", out}) {
    argv.push_back(a);
  }
  return argv;
}

// Runs the child to its end or the deadline; returns its last output lines.
std::string runToEnd(const ChildSpec& spec, std::chrono::seconds limit, int* status) {
  ChildProcess child = startChild(spec);
  std::vector<std::string> tail;
  OutputPump pump([&](int, bool, const std::string& line) {
    tail.push_back(line);
    if (tail.size() > 20) tail.erase(tail.begin());
  });
  pump.addRank(0, child.stdoutFd, child.stderrFd, "");
  const Deadline deadline = Deadline::after(limit);
  bool killed = false;
  while (::waitpid(child.pid, status, WNOHANG) == 0) {
    if (deadline.expired()) {
      ::kill(-child.pid, SIGKILL);
      ::waitpid(child.pid, status, 0);
      killed = true;
      break;
    }
    pump.pumpOnce(std::chrono::milliseconds(50));
  }
  ::kill(-child.pid, SIGKILL);  // whatever it left in its group (mpirun's ranks)
  pump.drain(std::chrono::seconds(2));
  ExitGuard::instance().forgetGroup(child.pid);
  std::string text = fmt::format("{}", fmt::join(tail, "\n"));
  if (killed) text += fmt::format("\n(killed after {} s)", limit.count());
  return text;
}

}  // namespace

void checkPeerAvailable(const std::string& peer) {
  if (peer == "mpi") {
    if (!onPath("mpirun")) {
      throw ValueError("--peer mpi: mpirun is not on PATH; install openmpi-bin and libopenmpi-dev "
                       "(apt-get install openmpi-bin libopenmpi-dev) and rebuild distlab");
    }
    if (::access(mpiPeerProgram().c_str(), X_OK) != 0) {
      throw ValueError(fmt::format(
          "--peer mpi: {} was not built (libopenmpi-dev was missing when distlab was "
          "configured); install libopenmpi-dev and re-run cmake",
          mpiPeerProgram().string()));
    }
  } else if (peer == "torch-gloo") {
    const std::string probe = std::string(kPython) + " -c 'import torch.distributed' 2>/dev/null";
    if (::access(kPython, X_OK) != 0 || std::system(probe.c_str()) != 0) {
      throw ValueError("--peer torch-gloo: /usr/bin/python3 cannot import torch.distributed; "
                       "install python3-torch (apt-get install python3-torch)");
    }
  } else {
    throw ValueError(fmt::format("--peer: unknown peer '{}'; use {}", peer,
                                 fmt::join(kBenchPeers, ",")));
  }
}

std::vector<BenchRow> runPeerBench(const std::string& peer, const CollectivesBenchOptions& o,
                                   const std::string& dir, std::chrono::seconds limit) {
  const std::string out = dir + "/rows_peer_" + peer + ".json";
  ChildSpec spec;
  spec.argv = peerArgv(peer, o, out);
  // Open MPI refuses root without these; single-threaded BLAS like the ranks.
  spec.env = environmentWith({"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
                              "OMP_NUM_THREADS=1", "OPENBLAS_NUM_THREADS=1"});
  spec.onForked = [](pid_t pid) { ExitGuard::instance().killGroupOnExit(pid); };
  int status = 0;
  const std::string tail = runToEnd(spec, limit, &status);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !fs::exists(out)) {
    throw Error(fmt::format("bench: peer {} failed ({}); its last lines:\n{}", peer,
                            describeStatus(status), tail));
  }
  std::vector<BenchRow> rows;
  std::ifstream in(out);
  for (const auto& j : nlohmann::json::parse(in)) rows.push_back(benchRowFromJson(j));
  return rows;
}

}  // namespace distlab::emulator
