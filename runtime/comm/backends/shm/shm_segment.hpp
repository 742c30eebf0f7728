#pragma once
// The shared-memory segment of one shm group: control blocks, per-op
// descriptors, double-buffered data slots and point-to-point channels.
//
// Note [shm segment lifecycle]
// Rank 0 creates the segment (shm_open with a fresh random name, ftruncate,
// mmap) and publishes the name in the store under <prefix>segment. The others
// read the name, shm_open and mmap it, and set `attached` and their pid in
// their control block. Once every rank has attached, every rank shm_unlinks
// the name (the first wins; the others get ENOENT): from then on the memory
// lives only as long as some rank maps it, so a crash (even SIGKILL) leaks
// nothing, and a creator that dies right after the last attach leaks nothing
// either. If attaching fails or times out, every rank that knows the name
// unlinks it on the way out. The one window left, the creator killed before
// every rank attached, is closed by whoever started the ranks: the name
// carries the creator's pid (/distlab_shm_<pid>_<random>), and the exit
// guard and the scenario runner unlink the segments of their dead ranks'
// pids (Note [Exit guard]).
//
// Layout (every part 64-byte aligned, sizes bounded by the options):
//   SegmentHeader | RankControl[n] | OpDesc[n][2] | counts[n][2][2n+1] |
//   EagerEntry[n][kEagerEntries] | EagerReadMarks[n] (groups of up to
//   kEagerMaxRanks ranks) |
//   slot[n][2][slotBytes] | ChannelHeader[n][n] (dst-major) |
//   ring[n][n][channelBytes] (src-major)
//
// Note [Segments for a thousand ranks]
// The segment grows with n^2 (a ring per ordered pair), which at world 1,024
// is ~70 GB of address space: tmpfs allocates a page only when it is first
// touched, so what costs memory is what the ranks touch. Hence the layout
// keeps what every rank reads apart from what only a pair uses: a rank's
// receive path scans the headers of its n incoming channels, which sit
// together (dst-major, n * 128 B), while a ring's pages are touched only once
// that pair exchanges a message. Likewise the per-pair byte counts of
// all-to-all and list all-gather live outside the descriptor line, n per
// rank and parity, touched only by operations that publish them; a rank
// keeps no n^2 copy of them (ShmOp reads them in place while they are
// stable, Note [Counts read in place] in shm_op.cpp).
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/comm/store/store.hpp"

namespace distlab::comm::shm {

// Ranks a segment may hold: what the scenario runner and the launcher accept
// (Note [Segments for a thousand ranks]).
inline constexpr int kMaxWorldSize = 1024;
inline constexpr uint64_t kSegmentMagic = 0x64697374'6c616273ULL;  // "distlabs"
inline constexpr int32_t kSingleCopyDisabled = -1;  // RankControl::singleCopyErr
inline constexpr int32_t kSingleCopySlower = -2;    // RankControl::singleCopyErr
inline constexpr int32_t kSingleCopyLargeOnly = -3;  // RankControl::singleCopyErr
inline constexpr int32_t kSingleCopyWideGroup = -4;  // RankControl::singleCopyErr

struct alignas(64) SegmentHeader {
  uint64_t magic;
  int32_t worldSize;
  uint32_t pad;
  uint64_t slotBytes;
  uint64_t channelBytes;
  uint64_t totalBytes;
  alignas(64) std::atomic<uint32_t> collBell;      // bumped on every arrival
  std::atomic<uint32_t> collSleepers;              // ranks in futex wait on collBell
  // Arrivals of every rank at every step, counted only by wide groups (Note
  // [Wide groups count arrivals] in shm_op.hpp).
  alignas(64) std::atomic<uint64_t> arrivals;
  // Ranks attached so far; a futex word the last one to attach wakes.
  alignas(64) std::atomic<uint32_t> attachedRanks;
  // 1 + the first rank that found a mismatch on the one-sided path, set after
  // its failure is published (Note [Eager rooted operations] in shm_eager.hpp);
  // read by every operation, written once.
  alignas(64) std::atomic<uint32_t> oneSidedMismatchRank;
};

// Failure kinds a rank publishes so its peers fail fast with the same kind.
enum class FailureKind : uint32_t { kNone = 0, kTimeout, kPeerDied, kAborted, kOther };

struct alignas(64) RankControl {
  std::atomic<uint64_t> step;    // collective steps this rank has arrived at
  std::atomic<uint64_t> seq;     // seq of the collective it runs (or last ran)
  std::atomic<uint32_t> opType;  // OpType of that collective
  std::atomic<int32_t> pid;
  std::atomic<uint32_t> attached;
  std::atomic<uint32_t> failed;  // FailureKind; set after `reason` is written
  // Where this rank mapped the segment, published before `attached`: a peer
  // reads the segment's magic through it to learn whether it may read this
  // rank's memory (Note [shm single copy]).
  std::atomic<uint64_t> base;
  // Set before the group's first step: 0 when this rank can read every peer's
  // memory fast enough to pay, kSingleCopyLargeOnly when it pays only for
  // messages beyond the caches, kSingleCopyDisabled when its options turned the
  // path off, kSingleCopyWideGroup when mode auto left the path off in a wide
  // group, kSingleCopySlower when reading a peer is slower than the slots
  // here, else the errno of its first failed read.
  std::atomic<int32_t> singleCopyErr;
  // The same for the all-gathers, whose single copy pays at a lower kernel
  // rate (Note [shm single copy]).
  std::atomic<int32_t> singleCopyAllgathersErr;
  char reason[464];
  alignas(64) std::atomic<uint32_t> p2pBell;  // bumped when p2p work for this rank may progress
  std::atomic<uint32_t> p2pSleepers;
  // Note [A driven engine is not woken] in shm_p2p.hpp: this rank's threads
  // driving its engine now, and whether a peer left out a wake-up meanwhile.
  std::atomic<uint32_t> p2pDrivers;
  std::atomic<uint32_t> p2pWakeSkipped;
  // Note [An idle engine is not woken for data] in shm_p2p.hpp: 1 while this
  // rank has no point-to-point operation posted or in flight.
  std::atomic<uint32_t> p2pIdle;
};

// What a rank is doing in one collective, published with its first step and
// compared by every rank (mismatched collectives and sizes never touch memory).
// One cache line; when hasCounts, the operation also publishes its per-rank
// send and receive byte counts (ShmSegment::counts).
inline constexpr uint64_t kDescSmallDataBytes = 32;  // OpDesc::smallData
struct alignas(64) OpDesc {
  // What every rank compares (ShmOp::validate).
  uint64_t seq;
  uint64_t bytes;         // this rank's contribution (input bytes)
  int32_t root;
  uint8_t opType;         // OpType
  uint8_t dtype;          // DType
  uint8_t reduceOp;       // ReduceOp::Kind
  uint8_t hasCounts;      // ShmSegment::counts of this rank and parity published
  // What peers read of this rank on the single-copy path, or, for an
  // operation whose first step carries its data here (Note [Small data in
  // the descriptor line] in shm_op.hpp), that data: never both, since such
  // an operation reads no peer's memory.
  struct SingleCopyFields {
    double scalar;        // PREMUL_SUM
    uint64_t addr;        // the buffer peers read in place (0: none)
  };
  union {
    SingleCopyFields singleCopy;
    uint8_t smallData[kDescSmallDataBytes];
  };
  // The last step this rank arrived at through this descriptor's parity, in
  // the descriptor's own cache line (Note [Arrival in the descriptor line]):
  // written (release, through std::atomic_ref) at every step, after the head
  // and RankControl::step; never copied with the head.
  uint64_t stamp;
};
// The descriptor, stamp included, is one cache line: a peer's arrival and its
// descriptor (and a small operation's data) arrive together.
static_assert(offsetof(OpDesc, smallData) + kDescSmallDataBytes == offsetof(OpDesc, stamp));
static_assert(offsetof(OpDesc, stamp) == 56 && sizeof(OpDesc) == 64);

// Note [Eager rooted operations] in shm_eager.hpp: each rank's outbox of
// kEagerEntries entries, each a head line and up to kEagerDataBytes of data.
inline constexpr int kEagerEntries = 16;
inline constexpr uint64_t kEagerDataBytes = 64 * 1024;
// The widest group that lays out outboxes (kWideGroupRanks in shm_wait.hpp).
inline constexpr int kEagerMaxRanks = 16;
struct alignas(64) EagerHead {
  // The writer's operation, compared by its readers (as ShmOp::validate does).
  uint64_t seq;
  uint64_t bytes;  // data bytes in this entry
  int32_t root;
  uint8_t opType;
  uint8_t dtype;
  uint8_t reduceOp;
  uint8_t pad;
  // Bit r: rank r reads this entry. Written before the stamp; only the
  // writer reads it back (Note [Eager read marks] in shm_eager.hpp).
  uint32_t readerMask;
  // The writer's entry count after writing this entry (index + 1), release.
  std::atomic<uint64_t> stamp;
};
struct EagerEntry {
  EagerHead head;
  alignas(64) uint8_t data[kEagerDataBytes];
};
static_assert(sizeof(EagerHead) == 64 && sizeof(EagerEntry) == 64 + kEagerDataBytes);
// One reader's row (Note [Eager read marks] in shm_eager.hpp): readUpTo[w] is
// the stamp of the last entry of rank w's outbox this reader has copied out
// (release). Only this reader writes it.
struct alignas(64) EagerReadMarks {
  std::atomic<uint64_t> readUpTo[kEagerMaxRanks];
};
static_assert(kEagerMaxRanks <= 32, "EagerHead::readerMask holds a bit per rank");

// Each side writes one cache line. inPlaceDone / inPlaceRevoked: Note
// [Point-to-point in place] in shm_p2p.hpp.
struct alignas(64) ChannelHeader {
  std::atomic<uint64_t> head;         // bytes consumed (receiver writes)
  std::atomic<uint64_t> inPlaceDone;  // in-place messages read (receiver writes)
  alignas(64) std::atomic<uint64_t> tail;  // bytes produced (sender writes)
  std::atomic<uint64_t> inPlaceRevoked;    // the last in-place message withdrawn (sender writes)
};
static_assert(sizeof(ChannelHeader) == 128);

struct SegmentOptions {
  uint64_t slotBytes = 256 * 1024;    // per rank per parity
  uint64_t channelBytes = 64 * 1024;  // per ordered rank pair (power of two)
};

class ShmSegment {
 public:
  // Creates (rank 0) or attaches (others) and waits until every rank attached
  // (or `timeout`: DistTimeoutError naming the missing ranks). Collective.
  static std::unique_ptr<ShmSegment> open(Store& store, const std::string& keyPrefix, int rank,
                                          int size, const SegmentOptions& options,
                                          std::chrono::milliseconds timeout);
  ~ShmSegment();  // munmap (and unlink if still linked)
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  int size() const { return size_; }
  int rank() const { return rank_; }
  uint64_t slotBytes() const { return header_->slotBytes; }
  uint64_t channelBytes() const { return header_->channelBytes; }
  const std::string& name() const { return name_; }

  SegmentHeader& header() { return *header_; }
  RankControl& control(int r) { return controls_[r]; }
  OpDesc& desc(int r, int parity) { return descs_[r * 2 + parity]; }
  // Rank r's byte counts for the operation of that parity: size() it sends to
  // each rank, size() it expects from each, then the largest it sends to one
  // rank (valid when its desc hasCounts).
  uint64_t* counts(int r, int parity) {
    return counts_ + (uint64_t(r) * 2 + parity) * countsPerRank(size_);
  }
  static uint64_t countsPerRank(int size) { return 2 * uint64_t(size) + 1; }
  uint8_t* slot(int r, int parity) { return slots_ + (uint64_t(r) * 2 + parity) * slotBytes(); }
  // Entry i (mod kEagerEntries) of rank w's eager outbox; only when hasEagerEntries().
  EagerEntry& eagerEntry(int w, uint64_t i) {
    return eager_[uint64_t(w) * kEagerEntries + i % kEagerEntries];
  }
  bool hasEagerEntries() const { return eager_ != nullptr; }
  // Reader r's read marks; only when hasEagerEntries().
  EagerReadMarks& eagerReadMarks(int r) { return eagerMarks_[r]; }
  // Whether a group of `size` ranks lays out eager outboxes (not in wide groups:
  // Note [Eager rooted operations]).
  static bool laysOutEagerEntries(int size);
  // Where this rank mapped the segment (peers publish theirs in RankControl::base).
  uint8_t* base() { return base_; }
  ChannelHeader& channel(int src, int dst);
  const ChannelHeader& channel(int src, int dst) const;
  uint8_t* channelData(int src, int dst);

 private:
  ShmSegment() = default;
  void layout(uint8_t* base, int size, const SegmentOptions& options);
  static uint64_t totalBytes(int size, const SegmentOptions& options);

  int rank_ = 0;
  int size_ = 0;
  std::string name_;
  bool linked_ = false;
  uint8_t* base_ = nullptr;
  uint64_t mapped_ = 0;
  SegmentHeader* header_ = nullptr;
  RankControl* controls_ = nullptr;
  OpDesc* descs_ = nullptr;
  uint64_t* counts_ = nullptr;
  EagerEntry* eager_ = nullptr;
  EagerReadMarks* eagerMarks_ = nullptr;
  uint8_t* slots_ = nullptr;
  ChannelHeader* channelHeaders_ = nullptr;
  uint8_t* rings_ = nullptr;
};

}  // namespace distlab::comm::shm
