#pragma once
// What the point-to-point engine's files share (shm_p2p.cpp, the engine;
// shm_p2p_in_place.cpp, Note [Point-to-point in place]): the message header
// and the ring's byte copies, and the records of sends, receives and messages
// the engine holds. Internal to ShmP2P: included by those files only.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "runtime/comm/backends/shm/shm_p2p.hpp"

namespace distlab::comm::shm {

// A member type, not file-local: Incoming (a member type) holds one.
struct ShmP2P::MsgHeader {
  uint32_t magic;
  int32_t tag;
  uint64_t bytes;
  uint64_t seq;
  uint64_t addr;  // kInPlaceMagic: the payload's address in the sender, else 0
};

namespace p2p {

constexpr uint32_t kMsgMagic = 0x6d736731;
constexpr uint32_t kInPlaceMagic = 0x6d736732;  // Note [Point-to-point in place]

// Note [Point-to-point in place]: how much a receiver reads per round (a
// round holds the engine; 1 MiB is ~50-100 us of copying).
constexpr uint64_t kInPlaceChunkBytes = 1024 * 1024;

inline void ringWrite(uint8_t* ring, uint64_t cap, uint64_t pos, const uint8_t* src, uint64_t n) {
  const uint64_t at = pos & (cap - 1);
  const uint64_t first = std::min(n, cap - at);
  std::memcpy(ring + at, src, first);
  if (first < n) std::memcpy(ring, src + first, n - first);
}

// Fills `n` bytes of the ring with zeros: the rest of a send cancelled in the
// middle of its message (the receiver expects the bytes its header promised).
inline void ringZero(uint8_t* ring, uint64_t cap, uint64_t pos, uint64_t n) {
  const uint64_t at = pos & (cap - 1);
  const uint64_t first = std::min(n, cap - at);
  std::memset(ring + at, 0, first);
  if (first < n) std::memset(ring, 0, n - first);
}

inline void ringRead(const uint8_t* ring, uint64_t cap, uint64_t pos, uint8_t* dst, uint64_t n) {
  const uint64_t at = pos & (cap - 1);
  const uint64_t first = std::min(n, cap - at);
  if (dst) {
    std::memcpy(dst, ring + at, first);
    if (first < n) std::memcpy(dst + first, ring, n - first);
  }
}

}  // namespace p2p

struct ShmP2P::Send {
  WorkPtr work;
  Tensor keep;
  const uint8_t* data;
  uint64_t bytes;
  int dst;
  int tag;
  uint64_t seq;
  Milliseconds timeout;
  Deadline deadline;
  bool headerDone = false;
  uint64_t sent = 0;
  bool cancelled = false;  // failed from outside mid-message: the rest is zeros
  bool inPlace = false;    // Note [Point-to-point in place]
  uint64_t inPlaceNumber = 0;  // its number on the channel, once its header is out
};

struct ShmP2P::Recv {
  WorkPtr work;
  Tensor keep;
  uint8_t* data;
  uint64_t bytes;
  int src;  // -1: any
  int tag;
  Milliseconds timeout;
  Deadline deadline;
};

struct ShmP2P::Unexpected {
  int src;
  int tag;
  std::vector<uint8_t> data;
  bool complete = false;
  std::shared_ptr<Recv> claimedBy;
  // Note [Point-to-point in place]: a message still in its sender (0: none).
  uint64_t inPlaceNumber = 0;
  uint64_t inPlaceAddr = 0;
  uint64_t inPlaceBytes = 0;
};

// Note [Point-to-point in place]: a message read from its sender's memory.
struct ShmP2P::InPlaceRead {
  int src;
  int tag;
  uint64_t bytes;
  uint64_t addr;
  uint64_t number;
  std::shared_ptr<Recv> target;  // null once cancelled: the rest is skipped
  uint64_t got = 0;
  bool withdrawn = false;  // the sender withdrew it: the rest is zeros
};

struct ShmP2P::Incoming {
  MsgHeader hdr{};
  uint64_t got = 0;
  std::shared_ptr<Recv> target;
  Unexpected* buffer = nullptr;  // stable: std::list
  bool discard = false;
};

}  // namespace distlab::comm::shm
