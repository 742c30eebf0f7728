#pragma once
// The shm collective algorithms, one file each (docs/DESIGN.md, house style 3).
// All run on the collective progress thread inside one ShmOp (Note [shm steps]); every one
// takes at least one step, so the descriptor check always runs. Pointers are
// raw and contiguous; sizes were validated by ProcessGroup (local) and are
// cross-checked by ShmOp (between ranks).
#include <cstdint>
#include <span>

#include "runtime/comm/backends/shm/shm_op.hpp"
#include "runtime/comm/types.hpp"
#include "runtime/tensor/dtype.hpp"

namespace distlab::comm::shm {

// Note [Own part from the input]
// What a rank sends to itself never goes through its slot: the reduce's root
// reduces its own chunk where it is, a reduce-scatter's rank (and the RS+AG
// allreduce's) reads its own part from its input, an all-to-all's rank copies
// its block for itself from its send buffer to its receive buffer, a
// scatter's root its part from ins[root] to its output, and an all-gather's
// rank its piece from its input (a gather's root stages nothing: nobody reads
// its slot). Staging it and copying it back out cost a copy for nothing: at
// world 2 on a 2-core AMD EPYC VM, 256 KiB-4 MiB reduces took 2.5-3.4x as
// long with the root's own chunk staged, the other operations 1.2-2x from
// 256 KiB (reports/collectives_all_ops.md). PREMUL_SUM still stages it,
// pre-scaled, so the caller's tensor is never scaled in place. An output that
// is the input itself (the in-place forms) is not copied onto itself; the
// copy is a memmove, which any other overlap of the two also survives.

// Note [Own part from the input]: whether a rank's own contribution to a
// reduction is read where it is (not for PREMUL_SUM, staged pre-scaled).
inline bool ownPartFromInput(ReduceOp op) { return op.kind != ReduceOp::kPremulSum; }

// shm_allreduce_direct.cpp: per chunk, everyone stages its input, then every
// rank reduces all slots itself (one step per chunk). Best for small messages.
void allreduceDirect(ShmOp& op, uint8_t* data, uint64_t count, DType dtype, ReduceOp redop);
// shm_allreduce_rsag.cpp: per chunk, reduce-scatter (rank r reduces part r)
// then all-gather of the parts (two steps per chunk, each rank reads ~2x the
// chunk instead of n x). Best for large messages on more ranks.
void allreduceRsAg(ShmOp& op, uint8_t* data, uint64_t count, DType dtype, ReduceOp redop);
// shm_reduce.cpp: direct reduction on the root only.
void reduceDirect(ShmOp& op, uint8_t* data, uint64_t count, DType dtype, ReduceOp redop, int root);
// shm_broadcast.cpp: root stages a chunk, the others copy it.
void broadcastChunked(ShmOp& op, uint8_t* data, uint64_t bytes, int root);
// shm_allgather.cpp: chunk k of every rank's input per step; rank q's input
// size is desc(q).bytes (may differ). `outs` empty: receive nothing (gather on
// a non-root rank); else outs[q] receives rank q's bytes. `peersReadMine`
// false (a gather's root): this rank's slot is read by nobody, so its input
// is not staged.
void allgatherChunked(ShmOp& op, const uint8_t* in, uint64_t inBytes,
                      std::span<uint8_t* const> outs, bool peersReadMine);
// shm_scatter.cpp: root's slot is split in size() parts; part q carries
// ins[q]'s next piece. `ins` only read on root.
void scatterChunked(ShmOp& op, std::span<const uint8_t* const> ins, uint8_t* out,
                    uint64_t bytes, int root);
// shm_reduce_scatter.cpp: each rank stages ins[q]'s piece in part q; rank q
// reduces part q of every slot into out (count elements per rank).
void reduceScatterParts(ShmOp& op, std::span<const uint8_t* const> ins, uint8_t* out,
                        uint64_t count, DType dtype, ReduceOp redop);
// The single-copy algorithms (Note [shm single copy]): the caller checked
// ShmGroup::singleCopy and set every descriptor's `addr` to the buffer peers
// read (allreduce: data; gathers: in; reduce-scatter: in).
// shm_allreduce_single_copy.cpp: reduce-scatter + all-gather from the peers'
// buffers (three syncs, no slot-sized steps).
void allreduceSingleCopy(ShmOp& op, uint8_t* data, uint64_t count, DType dtype, ReduceOp redop);
// shm_single_copy_gather.cpp: outs[q] (when not null) receives desc(q).bytes of
// rank q's buffer; covers allgather, gather (outs only on the root) and
// broadcast (outs[root] only, on the others).
void gatherSingleCopy(ShmOp& op, const uint8_t* in, std::span<uint8_t* const> outs);
// shm_reduce_scatter_single_copy.cpp: block me of every rank's contiguous
// input reduced into out (count elements), and its building block: reduce
// `count` elements at `offset` of every rank's buffer (mine at `mine`) into out.
void reduceScatterSingleCopy(ShmOp& op, const uint8_t* in, uint8_t* out, uint64_t count,
                             DType dtype, ReduceOp redop);
void reduceFromPeers(ShmOp& op, const uint8_t* mine, uint64_t offset, uint8_t* out,
                     uint64_t count, DType dtype, ReduceOp redop);
// shm_alltoall.cpp: like reduce-scatter without the reduction: rank q copies
// part q of every rank's slot; per-pair sizes may differ (uneven splits).
void alltoallParts(ShmOp& op, std::span<const uint8_t* const> sends,
                   std::span<const uint64_t> sendBytes, std::span<uint8_t* const> recvs,
                   std::span<const uint64_t> recvBytes);

}  // namespace distlab::comm::shm
