#include "emulator/trace/clock_align.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "runtime/core/clock.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::emulator {
namespace {

comm::Bytes encode(int64_t v) {
  comm::Bytes b(sizeof v);
  std::memcpy(b.data(), &v, sizeof v);
  return b;
}

int64_t decode(const comm::Bytes& b, const std::string& key) {
  if (b.size() != sizeof(int64_t)) {
    throw Error(fmt::format("clock alignment: store key '{}' holds {} bytes, expected 8", key,
                            b.size()));
  }
  int64_t v = 0;
  std::memcpy(&v, b.data(), sizeof v);
  return v;
}

std::string key(const ClockAlignOptions& o, const char* what, int rank, int round) {
  return fmt::format("{}/{}/{}/{}", o.prefix, what, rank, round);
}

void serve(comm::Store& store, int worldSize, const ClockAlignOptions& o,
           const std::function<int64_t()>& clock) {
  for (int r = 1; r < worldSize; ++r) {
    for (int k = 0; k < o.rounds; ++k) {
      store.wait({key(o, "ping", r, k)}, o.timeout);
      store.set(key(o, "pong", r, k), encode(clock()));
    }
  }
}

ClockAlignment measure(comm::Store& store, int rank, const ClockAlignOptions& o,
                       const std::function<int64_t()>& clock) {
  ClockAlignment best{0, std::numeric_limits<int64_t>::max()};
  for (int k = 0; k < o.rounds; ++k) {
    const std::string pong = key(o, "pong", rank, k);
    const int64_t t0 = clock();
    store.set(key(o, "ping", rank, k), {1});
    store.wait({pong}, o.timeout);
    const int64_t t1 = clock();
    const int64_t reference = decode(store.get(pong), pong);
    const int64_t half = (t1 - t0) / 2 + (t1 - t0) % 2;  // rounded up: a bound
    if (half < best.boundNs) best = {reference - (t0 + (t1 - t0) / 2), half};
  }
  return best;
}

}  // namespace

ClockAlignOptions clockAlignOptionsFor(int worldSize) {
  ClockAlignOptions o;
  if (worldSize <= 16) return o;
  o.rounds = std::max(2, 128 / worldSize);
  // 10 s for every 128 exchanges rank 0 may serve first.
  const int64_t exchanges = static_cast<int64_t>(worldSize) * o.rounds;
  o.timeout = std::chrono::milliseconds(10000) * ((exchanges + 127) / 128);
  return o;
}

ClockAlignment alignClocks(comm::Store& store, int rank, int worldSize,
                           const ClockAlignOptions& options) {
  if (options.rounds < 1) throw ValueError("clock alignment: rounds must be at least 1");
  const std::function<int64_t()> clock =
      options.clock ? options.clock : std::function<int64_t()>(monotonicNowNs);
  if (rank == 0) {
    serve(store, worldSize, options, clock);
    return {};
  }
  return measure(store, rank, options, clock);
}

}  // namespace distlab::emulator
