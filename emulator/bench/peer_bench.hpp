#pragma once
// Peers for `distlab bench collectives --peer mpi|torch-gloo`: the same sizes,
// inputs, iteration rule and statistics run through another implementation in
// the same run, so the report can print a time ratio per size.
//
//   mpi         Open MPI's MPI_Allreduce / MPI_Allgather / MPI_Reduce_scatter_block
//               / MPI_Bcast / MPI_Alltoall (shared-memory transport), run as
//               `mpirun -np N distlab_mpi_peer ...`. Needs `mpirun` (openmpi-bin) and
//               the peer program, which is built beside `distlab` when
//               libopenmpi-dev is installed at configure time.
//   torch-gloo  PyTorch's torch.distributed on the gloo backend (blocking calls),
//               `/usr/bin/python3 distlab_torch_gloo_peer.py`; needs python3-torch.
//
// Both are optional: neither is needed to build or test distlab. A missing one
// is a clear error naming the package to install.
#include <chrono>
#include <string>
#include <vector>

#include "emulator/bench/collectives_bench.hpp"

namespace distlab::emulator {

extern const std::vector<std::string> kBenchPeers;  // "mpi", "torch-gloo"

// Throws ValueError for an unknown peer or one that is not installed here.
void checkPeerAvailable(const std::string& peer);

// Runs the peer with o.worldSize ranks (its processes in their own process
// group, killed if this process ends first), waits up to `limit` and returns
// rank 0's rows (backend = peer, mode "blocking"). Throws Error when the peer
// fails or overruns, with the last lines it printed.
std::vector<BenchRow> runPeerBench(const std::string& peer, const CollectivesBenchOptions& o,
                                   const std::string& dir, std::chrono::seconds limit);

}  // namespace distlab::emulator
