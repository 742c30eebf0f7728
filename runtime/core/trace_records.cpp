#include "runtime/core/trace_records.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>

namespace distlab::trace::detail {
namespace {

// The fixed part of a record; the name's bytes, then the args' bytes follow.
struct Header {
  int64_t tsNs;
  int64_t durNs;
  uint64_t id;
  uint32_t track;
  uint32_t nameBytes;
  uint32_t argsBytes;
  Category category;
  char phase;
};

constexpr size_t kAlign = alignof(Header);

size_t alignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

size_t recordBytes(const Header& h) { return alignUp(sizeof(Header) + h.nameBytes + h.argsBytes); }

}  // namespace

RecordStore::~RecordStore() {
  for (const Block& b : blocks_) munmap(b.base, b.capacity);
}

char* RecordStore::reserve(size_t bytes) {
  if (!blocks_.empty() && blocks_.back().capacity - blocks_.back().used >= bytes) {
    Block& b = blocks_.back();
    char* at = b.base + b.used;
    b.used += bytes;
    return at;
  }
  const size_t capacity = bytes > kBlockBytes ? alignUp(bytes) : kBlockBytes;
  void* base = mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) throw std::bad_alloc();
  blocks_.push_back(Block{static_cast<char*>(base), capacity, bytes});
  return blocks_.back().base;
}

void RecordStore::append(const Event& e) {
  // Names and args are short (a label, a few JSON members); a 4 GiB one would
  // be a caller's bug, and is cut rather than wrapped.
  const Header h{e.tsNs,
                 e.durNs,
                 e.id,
                 e.track,
                 static_cast<uint32_t>(std::min<size_t>(e.name.size(), UINT32_MAX)),
                 static_cast<uint32_t>(std::min<size_t>(e.args.size(), UINT32_MAX)),
                 e.category,
                 e.phase};
  char* at = reserve(recordBytes(h));
  std::memcpy(at, &h, sizeof(h));
  std::memcpy(at + sizeof(h), e.name.data(), h.nameBytes);
  std::memcpy(at + sizeof(h) + h.nameBytes, e.args.data(), h.argsBytes);
  ++count_;
}

std::vector<Event> RecordStore::events() const {
  std::vector<Event> out;
  out.reserve(count_);
  for (const Block& b : blocks_) {
    for (size_t off = 0; off < b.used;) {
      Header h;
      std::memcpy(&h, b.base + off, sizeof(h));
      const char* text = b.base + off + sizeof(h);
      out.push_back(Event{h.phase, h.category, h.track, h.tsNs, h.durNs, h.id,
                          std::string(text, h.nameBytes),
                          std::string(text + h.nameBytes, h.argsBytes)});
      off += recordBytes(h);
    }
  }
  return out;
}

void RecordStore::clear() {
  for (size_t i = 1; i < blocks_.size(); ++i) munmap(blocks_[i].base, blocks_[i].capacity);
  if (!blocks_.empty()) {
    blocks_.resize(1);
    blocks_[0].used = 0;
  }
  count_ = 0;
}

}  // namespace distlab::trace::detail
