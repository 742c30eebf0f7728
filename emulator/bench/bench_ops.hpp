#pragma once
// The operations `distlab bench collectives` times and what each one's row
// means: its buffers on one rank, how to run it, what its output must hold,
// and nccl-tests' conventions for it (element count, reduce op, root, bus
// factor). The MPI and PyTorch peers (emulator/bench/peers/) time the same
// operations on the same inputs and follow the same conventions.
//
// Note [Bench operations]
// By torch.distributed's names (runtime/comm/op_names.hpp): the flat-tensor
// collectives (all_reduce, all_gather_into_tensor, reduce_scatter_tensor,
// broadcast, all_to_all_single), their list forms (all_gather,
// reduce_scatter, all_to_all: one tensor per rank, views of one buffer), the
// rooted ones (reduce, gather, scatter; root 0), barrier, and distlab's
// send_recv: every rank sends `count` elements to rank + 1 and receives as
// many from rank - 1 (nccl-tests' sendrecv; a pipeline stage's exchange).
// A row's size is the buffer nccl-tests names for the op: the in-place
// buffer (all_reduce, broadcast, reduce), what one rank sends (send_recv),
// and for the split ops the whole buffer, a multiple of the world size. A
// size whose element count rounds to the previous size's (8 and 16 B of a
// split op at world 4: 4 elements each) is that row again, so the sweep and
// its peers measure it once.
// barrier moves nothing and is timed once, at the smallest size (0 bytes).
// Only the root's output of reduce and gather is checked.
#include <functional>
#include <string>
#include <vector>

#include "runtime/comm/process_group.hpp"

namespace distlab::emulator {

// Every op name, in the order `--ops` lists them by default.
std::vector<std::string> benchOpNames();

// The buffers of one op at one size on one rank, and how to run / verify it.
struct OpBuffers {
  Tensor in;
  Tensor out;
  std::function<void()> run;
  std::function<float(uint64_t)> expected;  // expected out[i]
  bool checked = true;                      // false: this rank's output is not defined
};

// Element i of `rank`'s input (small integers: every sum is exact in float32).
float benchInputValue(int rank, uint64_t i);
// `rank`'s input of `count` elements on `device` (made on the host, copied).
Tensor benchInput(int rank, uint64_t count, const Device& device);

// `op`'s buffers for `count` float32 elements (elementCount's) on `device`;
// `async`: asyncOp=true then Work::wait, else the blocking path.
OpBuffers makeBenchOp(comm::ProcessGroup& g, const std::string& op, uint64_t count, bool async,
                      const Device& device);
// Elements of a row of `bytes` for `op` at world size n (see the Note).
uint64_t benchElementCount(const std::string& op, uint64_t bytes, int n);

// nccl-tests' conventions: whether the op reduces (redop sum, else none),
// its root (-1: none) and its bus-bandwidth factor at world size n.
bool benchOpReduces(const std::string& op);
int benchOpRoot(const std::string& op);
double busBandwidthFactor(const std::string& op, int n);

}  // namespace distlab::emulator
