#pragma once
// The alpha-beta link model (Hockney): an operation moving S bytes over a link
// with latency alpha and bandwidth B takes
//     t = alpha + S * busFactor(op, n) / B
// where the bus factor is the one nccl-tests uses to turn algorithm bandwidth
// into bus bandwidth (allreduce 2(n-1)/n; allgather, reduce_scatter, alltoall,
// gather, scatter (n-1)/n of the total size; broadcast, reduce, send/recv 1).
// S is the nccl-tests size: the per-rank buffer for allreduce/broadcast/reduce
// and point-to-point, the total (n x per-rank) for the gather/scatter family.
// A barrier costs alpha only.
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/comm/types.hpp"

namespace distlab::emulator {

struct LinkModel {
  std::string preset;           // name it came from ("" for explicit numbers)
  double latencyUs = 0;         // alpha, microseconds
  double bandwidthGBs = 0;      // B, 1e9 bytes per second; 0: the link is off

  bool enabled() const { return bandwidthGBs > 0 || latencyUs > 0; }
  // Modelled time of one operation, in seconds. `bytes` is the nccl-tests size
  // (see the header comment); `n` the group size.
  double seconds(comm::OpType op, int64_t bytes, int n) const;
};

// nccl-tests bus factor of `op` on `n` ranks (1 for n == 1 collectives too).
double busFactor(comm::OpType op, int n);

// Named presets: nvlink, pcie, infiniband, ethernet-100g, ethernet-10g,
// ethernet-1g. Throws ValueError listing the names for an unknown one.
LinkModel linkPreset(const std::string& name);
std::vector<std::string> linkPresetNames();

}  // namespace distlab::emulator
