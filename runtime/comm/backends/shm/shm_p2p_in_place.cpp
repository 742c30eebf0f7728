// Note [Point-to-point in place] (shm_p2p.hpp): the receiver's reads from
// the sender's memory, its count of messages done, the sender's withdrawal.
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "runtime/comm/backends/shm/shm_p2p.hpp"
#include "runtime/comm/backends/shm/shm_p2p_records.hpp"
#include "runtime/comm/backends/shm/shm_single_copy.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::comm::shm {

using p2p::kInPlaceChunkBytes;

bool ShmP2P::inPlaceFor(uint64_t bytes, int dst) const {
  return inPlaceMinBytes_ > 0 && bytes >= inPlaceMinBytes_ && dst != rank_;
}

void ShmP2P::acceptInPlaceHeader(int src, const MsgHeader& h) {
  const uint64_t number = ++inPlaceArrived_[src];
  auto it = std::find_if(recvs_.begin(), recvs_.end(), [&](const auto& r) {
    return r->tag == h.tag && (r->src < 0 || r->src == src);
  });
  if (it == recvs_.end()) {  // read once a receive is posted for it
    Unexpected u{src, h.tag, {}};
    u.inPlaceNumber = number;
    u.inPlaceAddr = h.addr;
    u.inPlaceBytes = h.bytes;
    unexpected_.push_back(std::move(u));
    return;
  }
  std::shared_ptr<Recv> recv = *it;
  recvs_.erase(it);
  startInPlaceRead(src, h.tag, h.bytes, h.addr, number, std::move(recv));
}

void ShmP2P::startInPlaceRead(int src, int tag, uint64_t bytes, uint64_t addr, uint64_t number,
                              std::shared_ptr<Recv> recv) {
  if (recv->bytes != bytes) {
    fail(recv, sizeMismatch(src, tag, recv->bytes, bytes));
    countInPlaceDone(src, number);
    return;
  }
  reading_.push_back(InPlaceRead{src, tag, bytes, addr, number, std::move(recv)});
}

bool ShmP2P::progressInPlaceReads() {
  for (auto it = reading_.begin(); it != reading_.end();) {
    InPlaceRead& r = *it;
    const uint64_t n = r.target ? std::min(kInPlaceChunkBytes, r.bytes - r.got) : r.bytes - r.got;
    if (r.target && !r.withdrawn && n > 0) {
      const int err =
          readProcessMemory(peers_.pid(r.src), r.addr + r.got, r.target->data + r.got, n);
      // Loaded after the read: a withdrawal before it may have let the
      // sender's caller free what was read.
      r.withdrawn = seg_.channel(r.src, rank_).inPlaceRevoked.load(std::memory_order_seq_cst) >=
                    r.number;
      if (err != 0 && !r.withdrawn) {
        const std::string ctx = fmt::format("{}: recv from rank {} (tag {}) of {} bytes, read in "
                                            "place", what(), r.src, r.tag, r.bytes);
        fail(r.target, err == ESRCH || !peers_.alive(r.src)
                           ? std::make_exception_ptr(DistPeerFailureError(fmt::format(
                                 "{}: rank {} (pid {}) exited", ctx, r.src, peers_.pid(r.src))))
                           : std::make_exception_ptr(DistBackendError(fmt::format(
                                 "{}: reading the sender's memory failed: {}", ctx,
                                 std::strerror(err)))));
        r.target = nullptr;
      }
    }
    if (r.target && r.withdrawn) std::memset(r.target->data + r.got, 0, n);
    r.got = r.target ? r.got + n : r.bytes;
    if (r.got < r.bytes) {
      ++it;
      continue;
    }
    countInPlaceDone(r.src, r.number);
    if (r.target) complete(r.target, r.src);
    it = reading_.erase(it);
  }
  return true;
}

void ShmP2P::countInPlaceDone(int src, uint64_t number) {
  inPlaceDone_[src] = std::max(inPlaceDone_[src], number);
  seg_.channel(src, rank_).inPlaceDone.store(inPlaceDone_[src], std::memory_order_release);
  ringPeerAfterData(src);
}

void ShmP2P::revokeInPlace(const Send& s) {
  if (!s.inPlace || s.inPlaceNumber == 0) return;
  seg_.channel(rank_, s.dst).inPlaceRevoked.store(s.inPlaceNumber, std::memory_order_seq_cst);
}

void ShmP2P::failInPlace(const std::exception_ptr& e) {
  for (auto& out : inPlaceOut_) {
    if (out) fail(out, e), out = nullptr;
  }
  for (auto& r : reading_) {
    if (r.target) fail(r.target, e), r.target = nullptr;  // the rest is skipped
  }
}

}  // namespace distlab::comm::shm
