#pragma once
// Reading a peer's memory in place: the capability behind the single-copy
// algorithms (shm_algorithms.hpp) and the group-wide agreement to use them.
//
// Note [shm single copy]
// Through the slots every byte that crosses ranks is copied twice: by its
// owner into shared memory, by the reader out of it (Note [shm large
// messages]). With cross-memory attach (process_vm_readv, Linux >= 3.2) a rank
// reads a peer's buffer straight into its own: one copy, and no slot-sized
// steps. Each rank publishes its buffer's address in its OpDesc (`addr`); the
// first sync validates every descriptor before any rank reads (the size and
// operation guarantees hold as before), and the op ends with a sync so no
// rank hands its tensor back to the caller while a peer may still read it.
//
// Whether it may be used: process_vm_readv needs ptrace rights over the peer
// (same user; Yama's ptrace_scope or a container's seccomp profile may refuse
// it). So every rank tries, when the group is created, to read the segment's
// magic through each peer's mapping of it (RankControl::base).
//
// Whether it pays: one copy is not always cheaper than two. The kernel pins
// the peer's pages, a batch at a time, and copies page by page; on the 2-core
// VM the reports come from that runs at 9-11 GB/s from cache against memcpy's
// 35-50 GB/s (reports/collectives_shm_notes.md), and every single-copy
// collective measured slower than the slots at every size. Per rank at world
// 2, an allreduce of N bytes copies 2N through the slots (stage N/2, reduce
// 2 x N/2 into output and slot, copy N/2 out) and, on the single-copy path, N
// through the kernel plus a reduction of N/2: it pays when
//   N / C + N / (2M) < 2N / M,  i.e. C > 2M/3
// for the kernel's rate C and memcpy's M. So in mode auto each rank also times
// both on the same shared pages (the next rank's mapping of the slots against
// its own; best of a few rounds) and says no when C <= 2M/3 (the gathers,
// one copy against two, would pay from C > M/2: the allreduce's rule is the
// stricter one, and one rule keeps one decision).
//
// Every rank publishes 0 or why not (RankControl::singleCopyErr) before the
// group's first sync; after it every rank reads every verdict, and the group
// uses the path only when all are 0 -- the same decision on every rank, which
// the algorithms need (a rank on the slot path and one on the single-copy
// path would take different steps).
//
// Guarantees: a read from a rank that died fails (ESRCH) and raises
// DistRanksPeerFailureError naming it; after every phase of reads the reader
// checks the peers are still alive (a pidfd: a process that lives after the
// read is the one that owned the pid during it, so a reused pid can never be
// read; where pidfd_open is missing ShmPeers falls back to kill(pid, 0), which
// cannot tell a reused pid apart). A peer that gave up on the op (its Work failed from
// outside) may free its buffer while this rank reads: the read then fails or
// returns stale bytes, and this rank's op fails at its next sync, as any
// failed collective leaves its output unspecified. Nothing is ever written
// into a peer's memory.
#include <sys/types.h>

#include <cstdint>
#include <string>

#include "runtime/comm/backends/shm/shm_peers.hpp"
#include "runtime/comm/backends/shm/shm_segment.hpp"

namespace distlab::comm::shm {

// The option shm.single_copy: kAuto uses the path when every rank may read
// every peer and found that it pays, kOn whenever every rank may (group
// creation fails naming a rank that may not, and why), kOff never.
enum class SingleCopyMode : uint8_t { kAuto, kOn, kOff };
// Throws ValueError naming the option and the valid values.
SingleCopyMode parseSingleCopyMode(const std::string& value);

// Copies `bytes` at `remote` in process `pid` into `local`; 0 on success,
// else the errno (EFAULT for a read that made no progress).
int readProcessMemory(pid_t pid, uint64_t remote, void* local, uint64_t bytes);

// This rank's verdict: the errno of the first failure to read the segment's
// magic through a peer's mapping (EIO: the bytes read were not the magic);
// else, with `timeIt`, kSingleCopySlower when reading a peer does not pay
// (see the Note); else 0.
int32_t probePeerMemory(ShmSegment& segment, const ShmPeers& peers, bool timeIt);

// After the group's first sync: the first rank whose verdict is not 0 (-1 when
// every rank may read every peer), and why, for messages.
int firstRankWithoutSingleCopy(ShmSegment& segment);
std::string singleCopyVerdictText(int32_t verdict);

}  // namespace distlab::comm::shm
