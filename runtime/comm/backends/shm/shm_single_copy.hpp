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
// the peer's pages, a batch at a time, and copies page by page, which from
// cache can run at a fraction of memcpy's rate (figures:
// reports/collectives_shm_notes.md, "Moved from headers"). Per rank at world
// 2, an allreduce of N bytes copies 2N through the slots (stage N/2, reduce
// 2 x N/2 into output and slot, copy N/2 out) and, on the single-copy path, N
// through the kernel plus a reduction of N/2: it pays when
//   N / C + N / (2M) < 2N / M,  i.e. C > 2M/3
// for the kernel's rate C and memcpy's M. An all-gather copies each byte it
// receives once against twice, and pays from C > M/2. So in mode auto each
// rank also times both on the same shared pages (the next rank's mapping of
// the slots against its own; best of a few rounds) and gives two verdicts:
// the reductions' (all-reduce, reduce-scatter, and gather, below: no when
// C <= 2M/3) and the all-gathers' (no when C <= M/2). Each is agreed on by
// the group on its own. On the Intel VM of reports/collectives_shm_notes.md
// (2026-12-07) the reductions' rule said "large only" while the all-gather
// read in place took 0.23-0.56x the slots' time at 64 KiB-1 MiB.
//
// Beyond the caches the rates change, and not by the same factor: the slots
// still run in cache (a slot is reused chunk after chunk) but every byte of a
// large tensor comes from and goes to memory either way, and there the
// kernel's per-page cost hides behind the memory's, so on some machines the
// path pays for large messages only (reports/collectives_shm_notes.md).
// The segment is too small to time that, so when the in-cache rule says no,
// a rank times the same two copies once per process on private buffers of
// kLargeProbeBytes (a read of its own memory takes the same kernel path) and,
// when the rule holds there, says "large only": the group then takes the path
// from kSingleCopyLargeBytes (at least shm.single_copy_min_bytes).
//
// A gather to one root is like broadcast, below: through the slots the
// leaves' copies in and the root's copies out overlap, so it keeps the
// stricter rule (the all-gathers' rule made 256-512 KiB gathers 1.1-2.3x
// slower there). Broadcast is the exception in mode auto: through the slots the root's copy
// in and the readers' copy out overlap, chunk by chunk, so it costs about one
// memcpy of the tensor against one kernel copy, which pays only when C > M
// (C stayed below M on every machine measured). It takes the path only with
// mode on.
//
// Every rank publishes its verdict (RankControl::singleCopyErr: 0, large
// only, or why not) before the group's first sync; after it every rank reads
// every verdict, and the group uses the path only when none says no, from the
// largest threshold any asks for -- the same decision on every rank, which the
// algorithms need (a rank on the slot path and one on the single-copy path
// would take different steps).
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
#include <vector>

#include "runtime/comm/backends/shm/shm_peers.hpp"
#include "runtime/comm/backends/shm/shm_segment.hpp"
#include "runtime/comm/backends/shm/shm_wait.hpp"

namespace distlab::comm::shm {

// The option shm.single_copy: kAuto uses the path when every rank may read
// every peer and found that it pays, kOn whenever every rank may (group
// creation fails naming a rank that may not, and why), kOff never.
// Parsed in shm_options.cpp.
enum class SingleCopyMode : uint8_t { kAuto, kOn, kOff };

// Copies `bytes` at `remote` in process `pid` into `local`; 0 on success,
// else the errno (EFAULT for a read that made no progress).
int readProcessMemory(pid_t pid, uint64_t remote, void* local, uint64_t bytes);

// Note [shm single copy], "beyond the caches": the size of the private
// buffers timed, and the smallest message the path takes on a large-only
// verdict (a core's L2 on both VMs measured: below it the slots' two copies
// run from cache).
inline constexpr uint64_t kLargeProbeBytes = 4ull << 20;
inline constexpr uint64_t kSingleCopyLargeBytes = 2ull << 20;

// This rank's verdicts: both the errno of the first failure to read the
// segment's magic through a peer's mapping (EIO: the bytes read were not the
// magic); else, with `timeIt`, each kSingleCopyLargeOnly when reading a peer
// pays only beyond the caches by its rule and kSingleCopySlower when it does
// not pay at all (see the Note); else 0.
// In a group of more than kWideGroupRanks ranks (Note [Wide groups and the
// single copy]) it reads only its next kWideProbePeers peers' magic, and with
// `timeIt` says kSingleCopyWideGroup without timing anything.
// The two verdicts (Note [shm single copy], "whether it pays"): equal unless
// only the rates tell them apart.
struct SingleCopyVerdicts {
  int32_t reductions = 0;  // all-reduce, reduce-scatter: C > 2M/3
  int32_t allgathers = 0;  // all-gather (list, tensor, coalesced): C > M/2
};
SingleCopyVerdicts probePeerMemory(ShmSegment& segment, const ShmPeers& peers, bool timeIt);
// Note [Wide groups and the single copy]
// With hundreds of ranks on a few cores, the probe would cost every rank a
// read of every peer (n^2 system calls in all) and timing buffers of
// kLargeProbeBytes, while the path saves one copy of data the ranks mostly
// read in turn on the same cores. Mode auto keeps such groups on the slots;
// mode on still checks, each rank its next few peers, that reads are allowed
// (so every rank is read once by somebody).
inline constexpr int kWideProbePeers = 2;

// What the group decides from every rank's verdict: the first rank that says
// no (-1 when every rank may read every peer and found that it pays, at some
// size), and the smallest message the group then reads in place (`minBytes`,
// the option, raised to kSingleCopyLargeBytes when any verdict is large only).
struct SingleCopyAgreement {
  int firstRankWithout = -1;
  uint64_t minBytes = 0;
};
SingleCopyAgreement agreeOnVerdicts(const std::vector<int32_t>& verdicts, uint64_t minBytes);
// The same, after the group's first sync, from the verdicts in the segment
// (RankControl::singleCopyAllgathersErr with `allgathers`, else singleCopyErr).
SingleCopyAgreement agreeOnVerdicts(ShmSegment& segment, uint64_t minBytes, bool allgathers);
std::string singleCopyVerdictText(int32_t verdict);
// Whether every rank found it may read every peer's memory, whatever the
// rates said (Note [Point-to-point in place] in shm_p2p.hpp): no verdict is
// an errno, the option off, or a wide group's (which read only a few peers).
bool everyRankMayRead(ShmSegment& segment);

}  // namespace distlab::comm::shm
